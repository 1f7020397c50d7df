# SPDX-License-Identifier: BSD-3-Clause
"""The forwards a patched Hugging Face norm and decoder layer run, on this package's operators.

A norm runs torch.ops.rmsnorm_backward.rms_norm in its family's casting mode, so on CPU y is bitwise
what the family's own forward gives, in fp32 and bf16 alike. A decoder layer adds each sublayer's
output to the residual stream and normalises the sum in one torch.ops.rmsnorm_backward.add_rms_norm
wherever a norm follows the add: the backward of both is one kernel pass with dres.

Autocast is off around the operators: the families' norms are plain elementwise torch code that
autocast leaves alone, so a patched norm must see its input in the dtype it arrives in (the operators'
own autocast rule would widen a bf16 input to fp32 first and change where y is rounded).
"""
from __future__ import annotations

import contextlib
import inspect

import torch

from ..torch.functional import rms_norm
from ..torch.functional import rms_norm_transformable as rms_norm_forward
from ..torch.fused import add_rms_norm_transformable as add_rms_norm_forward


def _own_dtype(x: torch.Tensor):
    """Autocast off for x's device type while the operators run (devices without autocast, such as
    meta, have nothing to turn off)."""
    kind = x.device.type
    if torch.amp.is_autocast_available(kind) and torch.is_autocast_enabled(kind):
        return torch.autocast(kind, enabled=False)
    return contextlib.nullcontext()


def norm_forward(norm, x: torch.Tensor) -> torch.Tensor:
    """The patched norm module's forward (its class's `patched_as`, a NormSpec, says how it computes)."""
    return normalise(norm, x, norm.patched_as)


def normalise(norm, x: torch.Tensor, spec) -> torch.Tensor:
    """The norm module's computation by `spec`, on this package's operators."""
    eps = getattr(norm, spec.eps_attr)
    with _own_dtype(x):
        if spec.casting == "fp32":  # torch.nn.RMSNorm's forms too: no weight, a weight shaped like all of x
            return rms_norm(x, norm.weight, eps, spec.gamma_offset, normalized_shape=getattr(norm, "normalized_shape", None))
        return rms_norm_forward(x, norm.weight, eps, spec.gamma_offset, 0, spec.casting)[0]


def add_norm(norm, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(norm(residual + x), residual + x), one add_rms_norm; the sum in the dtype torch gives it."""
    spec = getattr(norm, "patched_as", None)
    if spec is None or norm.weight is None:  # a norm left unpatched: the layer's own arithmetic
        s = residual + x
        return norm(s), s
    dtype = torch.promote_types(residual.dtype, x.dtype)
    with _own_dtype(x):
        y, s, _rstd = add_rms_norm_forward(x.to(dtype), residual.to(dtype), norm.weight, getattr(norm, spec.eps_attr),
                                           spec.gamma_offset, spec.casting)
    return y, s


def _arguments(layer, args, kwargs) -> tuple[torch.Tensor, dict]:
    """hidden_states and every other argument of the family's layer forward, by name, defaults filled
    in: what the family's forward hands its attention module."""
    bound = layer.hf_signature.bind(layer, *args, **kwargs)
    bound.apply_defaults()
    named = dict(bound.arguments)
    named.pop("self")
    hidden_states = named.pop("hidden_states")
    for name, p in layer.hf_signature.parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            named.update(named.pop(name, {}))
    return hidden_states, named


def _dropout(layer, name: str, h: torch.Tensor) -> torch.Tensor:
    drop = getattr(layer, name, None)  # Phi3's residual dropout, on the sublayer's output before the add
    return h if drop is None else drop(h)


def pre_layer_forward(layer, *args, **kwargs) -> torch.Tensor:
    """h = h + attn(norm1(h)); h = h + mlp(norm2(h)), the first add fused with norm2."""
    residual, named = _arguments(layer, args, kwargs)
    h, _ = layer.self_attn(hidden_states=layer.input_layernorm(residual), **named)
    h, residual = add_norm(layer.post_attention_layernorm, _dropout(layer, "resid_attn_dropout", h), residual)
    return residual + _dropout(layer, "resid_mlp_dropout", layer.mlp(h))


def sandwich_layer_forward(layer, *args, **kwargs) -> torch.Tensor:
    """h = h + norm2(attn(norm1(h))); h = h + norm4(mlp(norm3(h))), the first add fused with norm3."""
    residual, named = _arguments(layer, args, kwargs)
    h, _ = layer.self_attn(hidden_states=layer.input_layernorm(residual), **named)
    h, residual = add_norm(layer.pre_feedforward_layernorm, layer.post_attention_layernorm(h), residual)
    return residual + layer.post_feedforward_layernorm(layer.mlp(h))


LAYER_FORWARDS = {"pre": pre_layer_forward, "sandwich": sandwich_layer_forward}
