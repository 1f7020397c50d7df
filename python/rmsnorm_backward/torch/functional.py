# SPDX-License-Identifier: BSD-3-Clause
"""rms_norm: the forward as the operator torch.ops.rmsnorm_backward.rms_norm, whose backward is ours.

    rstd = 1 / sqrt(mean(x^2 over gamma's dims) + eps)        y = x * rstd * (gamma + gamma_offset)

gamma_offset is Gemma's (1 + w), Megatron's layernorm_1p: added to gamma in fp32, so a 16-bit gamma
keeps its low bits; it is the operator's attribute, so the backward costs what gamma_offset 0 does.
The forward runs in fp32 torch ops (torch_npu.npu_rms_norm on an NPU, when gamma has x's dtype and
gamma_offset is 0) and
returns y in x's dtype with rstd in fp32, shaped x.shape[:-k] + (1,) * k, k = gamma.ndim. Being an
operator with a fake implementation, it checks its inputs by the C++ rules in eager mode and while
torch.compile traces, gradients wanted or not. The backward runs rms_norm_backward on dy and x in
x's dtype and gamma in its own where the operator takes them: gamma of x's dtype, or a float32 gamma
beside a 16-bit x (fp32 master weights: the kernel reads it as float32, dy and x stay 16-bit). A
16-bit gamma beside a float32 x runs all in float32. dx and dgamma are then given the dtypes of x and
gamma. (A grad passed in another dtype arrives already cast to y's dtype, x's: autograd does that.)

Autocast: torch 2.13 puts aten::rms_norm on its float32 list (AT_FORALL_FP32, registered for CUDA;
CPU has no rule for it). Both operators here take that rule on CPU (and on the NPU when torch_npu is
loaded first, see _npu.py): inside an autocast region their floating inputs are cast to float32, so
they compute and return float32, and autograd hands each input's grad back in its storage dtype.
"""
from __future__ import annotations

import torch

from .. import attrs
from ..errors import InvalidInputError
from . import _func, _validate
from ._op import NAMESPACE, rms_norm_backward


def _ndim(gamma: torch.Tensor | None, ndim: int) -> int:
    """k: the normalised trailing dims (gamma's, or `ndim` without gamma)."""
    return ndim if gamma is None else gamma.ndim


def _rstd_shape(x: torch.Tensor, k: int):
    return x.shape[:x.ndim - k] + (1,) * k


def _eps(x: torch.Tensor, eps: float | None) -> float:
    """None means the machine epsilon of x's dtype, as torch.nn.functional.rms_norm has it."""
    return torch.finfo(x.dtype).eps if eps is None else eps


# Where y is rounded (the "casting mode"; the backward is the same for both):
#   "fp32"   y = (x * rstd * (gamma + gamma_offset)) in fp32, rounded once to x's dtype (Gemma's, torch's)
#   "input"  y = gamma * (x * rstd rounded to x's dtype), in the dtype torch promotes gamma and x to
#            (Llama's: the normalised x is rounded before the weight; gamma_offset, if any, added to gamma)
CASTINGS = ("fp32", "input")


def scaled(xf: torch.Tensor, rstd: torch.Tensor, gamma: torch.Tensor | None, gamma_offset: float, dtype: torch.dtype,
           casting: str) -> torch.Tensor:
    """y from x in fp32 (xf) and rstd, by the casting mode (CASTINGS)."""
    if casting not in CASTINGS:
        raise InvalidInputError(f"casting must be one of {', '.join(CASTINGS)} (got {casting!r}).")
    if gamma is None:
        return (xf * rstd).to(dtype)
    if casting == "input":
        return (gamma if gamma_offset == 0.0 else gamma + gamma_offset) * (xf * rstd).to(dtype)
    return (xf * rstd * (gamma.float() + gamma_offset)).to(dtype)


def y_dtype(x: torch.Tensor, gamma: torch.Tensor | None, casting: str) -> torch.dtype:
    return torch.promote_types(x.dtype, gamma.dtype) if casting == "input" and gamma is not None else x.dtype


@torch.library.custom_op(f"{NAMESPACE}::rms_norm", mutates_args=())
def rms_norm_forward(x: torch.Tensor, gamma: torch.Tensor | None, eps: float | None, gamma_offset: float = attrs.GAMMA_OFFSET,
                     ndim: int = 0, casting: str = "fp32") -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd) of RMSNorm over x's last k dims (k = gamma.ndim, or ndim without gamma), scaled by
    gamma + gamma_offset (by 1 without gamma), y rounded by the casting mode."""
    _validate.check_forward(x, gamma, gamma_offset, ndim)
    eps = _eps(x, eps)
    k = _ndim(gamma, ndim)
    if (x.device.type == "npu" and gamma is not None and gamma.dtype == x.dtype and gamma_offset == 0.0
            and casting == "fp32"):
        import torch_npu  # already loaded: a tensor lives on an NPU

        y, rstd = torch_npu.npu_rms_norm(x, gamma, epsilon=eps)
        return y, rstd.reshape(_rstd_shape(x, k))
    dims = tuple(range(x.ndim - k, x.ndim))
    xf = x.float()
    rstd = torch.rsqrt(xf.square().mean(dim=dims, keepdim=True) + eps)
    return scaled(xf, rstd, gamma, gamma_offset, x.dtype, casting), rstd


@rms_norm_forward.register_fake
def _fake(x, gamma, eps, gamma_offset=attrs.GAMMA_OFFSET, ndim=0, casting="fp32"):
    _validate.check_forward(x, gamma, gamma_offset, ndim)
    return (x.new_empty(x.shape, dtype=y_dtype(x, gamma, casting)),
            x.new_empty(_rstd_shape(x, _ndim(gamma, ndim)), dtype=torch.float32))


def _setup_context(ctx, inputs, output):
    x, gamma, _eps, ctx.gamma_offset, _ndim_, _casting = inputs
    ctx.save_for_backward(x, output[1], gamma)


def _backward(ctx, dy, _drstd):
    x, rstd, gamma = ctx.saved_tensors
    if gamma is None:  # the operator without gamma: no dgamma is computed
        dx, _ = rms_norm_backward(dy.to(x.dtype), x, rstd, None)
        return dx, None, None, None, None, None
    data, scale = _validate.backward_dtypes(x.dtype, gamma.dtype)
    dx, dgamma = rms_norm_backward(dy.to(data), x.to(data), rstd, gamma.to(scale), gamma_offset=ctx.gamma_offset)
    return dx.to(x.dtype), dgamma.to(gamma.dtype), None, None, None, None


rms_norm_forward.register_autograd(_backward, setup_context=_setup_context)


# The operator, or under a torch.func transform an autograd.Function running it (_func.py).
rms_norm_transformable = _func.transformable(rms_norm_forward, _setup_context, _backward, "rms_norm")


def rms_norm(x: torch.Tensor, gamma: torch.Tensor | None, eps: float | None = 1e-6, gamma_offset: float = attrs.GAMMA_OFFSET, *,
             normalized_shape=None) -> torch.Tensor:
    """RMSNorm of `x` over its last gamma.ndim dims, scaled by `gamma + gamma_offset`; y has x's dtype.

    gamma=None: no scale and no dgamma (the operator's form without gamma); `normalized_shape` (x's
    trailing dims) then says what a row is, as in torch.nn.functional.rms_norm.

    eps=None means torch.finfo(x.dtype).eps, as in torch.nn.functional.rms_norm (under autocast, of
    the dtype the op computes in: float32). A gamma shaped like all of x (a 1-D x, or one row) is
    one row of the operator. Raises InvalidInputError (naming the tensor and the rule) for inputs
    the operator rejects: a gamma that is not x's trailing shape, tensors on different devices, a
    dtype outside float16/bfloat16/float32, a gamma_offset without gamma, a normalized_shape that is not
    gamma's shape, an eps that is not a real number or None.
    """
    eps = _validate.eps_value(eps)
    gamma_offset = _validate.gamma_offset_checked(gamma_offset, has_gamma=gamma is not None)
    row = _validate.normalized_row(x, gamma, normalized_shape)
    if gamma is None:
        if len(row) == x.ndim:
            return rms_norm_transformable(x.unsqueeze(0), None, eps, gamma_offset, len(row))[0].squeeze(0)
        return rms_norm_transformable(x, None, eps, gamma_offset, len(row))[0]
    if x.ndim == gamma.ndim and x.shape == gamma.shape:
        return rms_norm_transformable(x.unsqueeze(0), gamma, eps, gamma_offset)[0].squeeze(0)
    return rms_norm_transformable(x, gamma, eps, gamma_offset)[0]


# torch's own autocast rule of rms_norm (see the module docstring), for the forward and the backward.
AUTOCAST_RULE = torch.float32
for _op in (rms_norm_forward, rms_norm_backward):
    torch.library.register_autocast(_op, "cpu", AUTOCAST_RULE)
