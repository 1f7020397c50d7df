"""rms_norm: the forward as the operator torch.ops.rmsnorm_backward.rms_norm, whose backward is ours.

    rstd = 1 / sqrt(mean(x^2 over gamma's dims) + eps)        y = x * rstd * gamma

The forward runs in fp32 torch ops (torch_npu.npu_rms_norm on an NPU, when gamma has x's dtype) and
returns y in x's dtype with rstd in fp32, shaped x.shape[:-k] + (1,) * k, k = gamma.ndim. Being an
operator with a fake implementation, it checks its inputs by the C++ rules in eager mode and while
torch.compile traces, gradients wanted or not. The backward runs rms_norm_backward in one dtype for
dy, x and gamma, as the kernel requires: the wider of x's and gamma's, so a fp32 gamma next to a bf16
x (mixed precision) loses nothing; dx and dgamma are then rounded to the dtypes of x and gamma. (A grad
passed in another dtype arrives already cast to y's dtype, x's: autograd does that.)
"""
from __future__ import annotations

import torch

from . import _validate
from ._op import NAMESPACE, rms_norm_backward


def _rstd_shape(x: torch.Tensor, gamma: torch.Tensor):
    return x.shape[:x.ndim - gamma.ndim] + (1,) * gamma.ndim


@torch.library.custom_op(f"{NAMESPACE}::rms_norm", mutates_args=())
def rms_norm_forward(x: torch.Tensor, gamma: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd) of RMSNorm over x's last gamma.ndim dims."""
    _validate.check_forward(x, gamma)
    if x.device.type == "npu" and gamma.dtype == x.dtype:
        import torch_npu  # already loaded: a tensor lives on an NPU

        y, rstd = torch_npu.npu_rms_norm(x, gamma, epsilon=eps)
        return y, rstd.reshape(_rstd_shape(x, gamma))
    dims = tuple(range(x.ndim - gamma.ndim, x.ndim))
    xf = x.float()
    rstd = torch.rsqrt(xf.square().mean(dim=dims, keepdim=True) + eps)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


@rms_norm_forward.register_fake
def _fake(x, gamma, eps):
    _validate.check_forward(x, gamma)
    return x.new_empty(x.shape), x.new_empty(_rstd_shape(x, gamma), dtype=torch.float32)


def _setup_context(ctx, inputs, output):
    x, gamma, _eps = inputs
    ctx.save_for_backward(x, output[1], gamma)


def _backward(ctx, dy, _drstd):
    x, rstd, gamma = ctx.saved_tensors
    dtype = torch.promote_types(x.dtype, gamma.dtype)
    dx, dgamma = rms_norm_backward(dy.to(dtype), x.to(dtype), rstd, gamma.to(dtype))
    return dx.to(x.dtype), dgamma.to(gamma.dtype), None


rms_norm_forward.register_autograd(_backward, setup_context=_setup_context)


def rms_norm(x: torch.Tensor, gamma: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of `x` over its last gamma.ndim dims, scaled by `gamma`; y has x's dtype.

    Raises InvalidInputError (naming the tensor and the rule) for inputs the operator rejects:
    a gamma that is not x's trailing shape, tensors on different devices, a dtype outside
    float16/bfloat16/float32.
    """
    return rms_norm_forward(x, gamma, float(eps))[0]
