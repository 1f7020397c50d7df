# SPDX-License-Identifier: BSD-3-Clause
"""Megatron-core (and MindSpeed, built on it): the norm as a layer-spec module, and a GPT layer spec
with it in every RMSNorm place.

    RMSNorm(config, hidden_size, eps=1e-5)   what a Megatron layer spec builds a norm with (build_module):
                                            config.layernorm_zero_centered_gamma scales by 1 + weight
                                            (the weight starting at 0), config.sequence_parallel marks
                                            the weight as Megatron's sequence-parallel parameters are
                                            marked (its grads all-reduced across the tensor-parallel group)
    gpt_layer_spec(**kwargs)                get_gpt_layer_local_spec(normalization="RMSNorm", **kwargs)
                                            with RMSNorm in every norm place

megatron-core is not a dependency: importing this module needs it.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass

from ..errors import InvalidInputError
from ..torch.module import RMSNorm as _TorchRMSNorm


class RMSNorm(_TorchRMSNorm):
    """The operator's norm under Megatron's norm signature (config, hidden_size, eps)."""

    def __init__(self, config, hidden_size: int, eps: float = 1e-5, **_megatron_options):
        normalization = getattr(config, "normalization", "RMSNorm")
        if normalization != "RMSNorm":
            raise InvalidInputError(f"config.normalization must be 'RMSNorm' for rmsnorm_backward's norm "
                                    f"(got {normalization!r}).")
        offset = 1.0 if getattr(config, "layernorm_zero_centered_gamma", False) else 0.0
        super().__init__(hidden_size, eps=eps, gamma_offset=offset, dtype=getattr(config, "params_dtype", None))
        self.weight.sequence_parallel = bool(getattr(config, "sequence_parallel", False))


def _replace(spec, old, new):
    """spec with every submodule that is `old` (a class or a spec building it) made `new`, in place."""
    submodules = getattr(spec, "submodules", None)
    if submodules is None or not is_dataclass(submodules):
        return spec
    for field in fields(submodules):
        value = getattr(submodules, field.name)
        if value is old or getattr(value, "module", None) is old:
            setattr(submodules, field.name, new)
        else:
            _replace(value, old, new)
    return spec


def gpt_layer_spec(**kwargs):
    """Megatron's local GPT layer spec with normalization="RMSNorm", its norms this package's RMSNorm
    (the input and pre-MLP norms, and the q/k norms with qk_layernorm)."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    if kwargs.pop("normalization", "RMSNorm") != "RMSNorm":
        raise InvalidInputError("gpt_layer_spec builds RMSNorm layers: normalization must be 'RMSNorm'.")
    spec = get_gpt_layer_local_spec(normalization="RMSNorm", **kwargs)
    return _replace(spec, spec.submodules.input_layernorm, RMSNorm)
