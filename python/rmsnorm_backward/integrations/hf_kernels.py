# SPDX-License-Identifier: BSD-3-Clause
"""The operator as a layer of the Hugging Face `kernels` hub, for the layer name "RMSNorm" that
transformers marks its norms with (use_kernel_forward_from_hub("RMSNorm")).

    kernel_mapping(devices=("npu",))   {"RMSNorm": {device: the layer}}: for kernels.register_kernel_mapping,
                                        kernels.use_kernel_mapping, then kernels.kernelize(model,
                                        mode=Mode.TRAINING [| Mode.TORCH_COMPILE], device=...)

The layer computes what the norm it replaces computes (recognise.py: Llama's, Gemma's, OLMo2's forms,
their eps attribute), its backward this operator; a norm of another form is refused, naming its class.
kernels is not a dependency: kernel_mapping needs it, this module imports without it.
"""
from __future__ import annotations

import torch

from ..errors import InvalidInputError
from . import forwards, recognise

LAYER_NAME = "RMSNorm"


class RMSNorm(torch.nn.Module):
    """A kernels layer: stateless, its forward run on the replaced norm module (`self`)."""

    has_backward = True      # Mode.TRAINING: the backward is the operator
    can_torch_compile = True  # Mode.TORCH_COMPILE: the operators have fake implementations

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return forwards.normalise(self, hidden_states, _spec(type(self)))


@torch.compiler.assume_constant_result  # read from the class, not traced by torch.compile
def _spec(cls: type) -> recognise.NormSpec:
    spec = recognise.norm_spec(cls)
    if spec is None:
        raise InvalidInputError(f"{cls.__module__}.{cls.__qualname__} is a norm rmsnorm_backward's kernels layer "
                                "does not know: its gamma offset and eps cannot be read (register_norm declares them).")
    return spec


class Repository:
    """This package's layer where kernels expects a repository (LayerRepositoryProtocol): nothing is
    downloaded, load() returns the class."""

    layer_name = LAYER_NAME

    def load(self) -> type[torch.nn.Module]:
        return RMSNorm

    def __repr__(self) -> str:
        return "rmsnorm_backward.integrations.hf_kernels.Repository()"


def kernel_mapping(devices=("npu",)) -> dict:
    """The kernel mapping putting this package's layer in place of "RMSNorm" on `devices` (kernels'
    device types: "npu" on Ascend; "cpu" runs the operator on the CPU twin)."""
    from kernels import Mode

    if isinstance(devices, str):
        devices = (devices,)
    repo = Repository()
    return {LAYER_NAME: {device: {Mode.TRAINING: repo, Mode.TRAINING | Mode.TORCH_COMPILE: repo, Mode.INFERENCE: repo}
                         for device in devices}}
