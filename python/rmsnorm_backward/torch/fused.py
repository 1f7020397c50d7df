# SPDX-License-Identifier: BSD-3-Clause
"""add_rms_norm: the fused residual add + RMSNorm of a pre-norm transformer block, whose backward is
one pass of the RmsNormBackward kernel with dres.

    s = x + residual                           (in x's dtype: the residual stream as stored)
    rstd = 1 / sqrt(mean(s^2 over gamma's dims) + eps)        y = s * rstd * (gamma + gamma_offset)

Forward: (y, s), by torch_npu.npu_add_rms_norm on an NPU (when gamma has x's dtype and gamma_offset is 0).
Backward: with dy the gradient of y and ds the gradient arriving on s through the
residual stream, the gradient of both x and residual is ds + rms_norm_backward(dy, s, rstd, gamma),
which the kernel computes in one pass (dres = ds, added in fp32 before dx is rounded), instead of an
RmsNormGrad followed by a separate add (two more passes over memory). torch_npu's npu_add_rms_norm
and CANN's add_rms_norm are forward-only; this is the backward they lack.
"""
from __future__ import annotations

import torch

from .. import attrs
from . import _func, _validate
from ._op import NAMESPACE, rms_norm_backward
from .functional import AUTOCAST_RULE, _eps, _rstd_shape, scaled, y_dtype


@torch.library.custom_op(f"{NAMESPACE}::add_rms_norm", mutates_args=())
def add_rms_norm_forward(x: torch.Tensor, residual: torch.Tensor, gamma: torch.Tensor, eps: float | None,
                         gamma_offset: float = attrs.GAMMA_OFFSET, casting: str = "fp32") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, s, rstd) of RMSNorm of s = x + residual over gamma's dims, scaled by gamma + gamma_offset, y
    rounded by the casting mode (functional.CASTINGS)."""
    _check(x, residual, gamma, gamma_offset)
    eps = _eps(x, eps)
    if x.device.type == "npu" and gamma.dtype == x.dtype and gamma_offset == 0.0 and casting == "fp32":
        import torch_npu  # already loaded: a tensor lives on an NPU

        y, rstd, s = torch_npu.npu_add_rms_norm(x, residual, gamma, epsilon=eps)
        return y, s, rstd.reshape(_rstd_shape(x, gamma.ndim))
    s = (x + residual).to(x.dtype)
    dims = tuple(range(s.ndim - gamma.ndim, s.ndim))
    sf = s.float()
    rstd = torch.rsqrt(sf.square().mean(dim=dims, keepdim=True) + eps)
    return scaled(sf, rstd, gamma, gamma_offset, x.dtype, casting), s, rstd


def _check(x, residual, gamma, gamma_offset):
    _validate.check_devices(x=x, residual=residual, gamma=gamma)
    if residual.shape != x.shape or residual.dtype != x.dtype:
        from ..errors import InvalidInputError

        raise InvalidInputError(f"residual must have the shape and dtype of x (residual {list(residual.shape)} "
                                f"{residual.dtype}, x {list(x.shape)} {x.dtype}).")
    _validate.check_forward(x, gamma, gamma_offset)


@add_rms_norm_forward.register_fake
def _fake(x, residual, gamma, eps, gamma_offset=attrs.GAMMA_OFFSET, casting="fp32"):
    _check(x, residual, gamma, gamma_offset)
    return x.new_empty(x.shape, dtype=y_dtype(x, gamma, casting)), x.new_empty(x.shape), x.new_empty(_rstd_shape(x, gamma.ndim), dtype=torch.float32)


def _setup_context(ctx, inputs, output):
    _x, _residual, gamma, _eps_, ctx.gamma_offset, _casting = inputs
    ctx.save_for_backward(output[1], output[2], gamma)
    ctx.set_materialize_grads(False)  # an s nothing downstream used brings no gradient, not zeros


def _backward(ctx, dy, ds, _drstd):
    s, rstd, gamma = ctx.saved_tensors
    data, scale = _validate.backward_dtypes(s.dtype, gamma.dtype)
    dy = torch.zeros_like(s) if dy is None else dy
    dres = None if ds is None else ds.to(data)  # s unused downstream: the plain backward
    dx, dgamma = rms_norm_backward(dy.to(data), s.to(data), rstd, gamma.to(scale), dres, gamma_offset=ctx.gamma_offset)
    dx = dx.to(s.dtype)
    return dx, dx, dgamma.to(gamma.dtype), None, None, None


add_rms_norm_forward.register_autograd(_backward, setup_context=_setup_context)
# The operator, or under a torch.func transform an autograd.Function running it (_func.py).
add_rms_norm_transformable = _func.transformable(add_rms_norm_forward, _setup_context, _backward, "add_rms_norm")
torch.library.register_autocast(add_rms_norm_forward, "cpu", AUTOCAST_RULE)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, gamma: torch.Tensor, eps: float | None = 1e-6,
                 gamma_offset: float = attrs.GAMMA_OFFSET) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, s): s = x + residual (the residual stream out, x's dtype) and y = RMSNorm(s) * (gamma +
    gamma_offset) over gamma's dims. The backward of both is one kernel pass (see the module docstring).
    InvalidInputError for inputs the operator rejects, naming the tensor and the rule (gamma=None
    among them: the fused form always has gamma)."""
    _validate.require_gamma(gamma, "add_rms_norm")
    eps = _validate.eps_value(eps)
    gamma_offset = _validate.gamma_offset_checked(gamma_offset, has_gamma=True)
    y, s, _rstd = add_rms_norm_transformable(x, residual, gamma, eps, gamma_offset)
    return y, s
