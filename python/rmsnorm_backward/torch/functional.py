"""rms_norm with autograd: the forward in fp32 torch ops, the backward through our operator.

    rstd = 1 / sqrt(mean(x^2 over gamma's dims) + eps)        y = x * rstd * gamma

On an NPU the forward is torch_npu.npu_rms_norm (its rstd has the shape our operator takes). The
backward runs the operator in one dtype for dy, x and gamma, as the kernel requires: the wider of x's
and gamma's, so a fp32 gamma next to a bf16 x (mixed precision) loses nothing; dx and dgamma are then
rounded to the dtypes of x and gamma. (A grad passed in another dtype arrives here already cast to
y's dtype, x's: autograd does that.)
"""
from __future__ import annotations

import torch

from . import _validate
from ._op import rms_norm_backward


def _forward(x: torch.Tensor, gamma: torch.Tensor, eps: float):
    if x.device.type == "npu" and gamma.dtype == x.dtype:
        import torch_npu  # already loaded: a tensor lives on an NPU

        return torch_npu.npu_rms_norm(x, gamma, epsilon=eps)
    dims = tuple(range(x.ndim - gamma.ndim, x.ndim))
    xf = x.float()
    rstd = torch.rsqrt(xf.square().mean(dim=dims, keepdim=True) + eps)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


class _RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, eps):
        y, rstd = _forward(x, gamma, eps)
        ctx.save_for_backward(x, rstd, gamma)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, rstd, gamma = ctx.saved_tensors
        dtype = torch.promote_types(x.dtype, gamma.dtype)
        dx, dgamma = rms_norm_backward(dy.to(dtype), x.to(dtype), rstd, gamma.to(dtype))
        return dx.to(x.dtype), dgamma.to(gamma.dtype), None


def rms_norm(x: torch.Tensor, gamma: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of `x` over its last gamma.ndim dims, scaled by `gamma`; y has x's dtype.

    Raises InvalidInputError (naming the tensor and the rule) for inputs the operator rejects:
    a gamma that is not x's trailing shape, tensors on different devices, a dtype outside
    float16/bfloat16/float32.
    """
    # Dynamo cannot trace into the C++ rules; under torch.compile the operator's fake implementation
    # applies them when the backward graph is traced, still before anything runs.
    if not torch.compiler.is_compiling():
        _validate.check_forward(x, gamma)
    return _RMSNormFunction.apply(x, gamma, float(eps))
