# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch front end of RmsNormBackward (imports torch; the rest of the package does not).

    torch.ops.rmsnorm_backward.rms_norm_backward(dy, x, rstd, gamma | None, gamma_offset=0.0) -> (dx, dgamma)
    rms_norm(x, gamma, eps=1e-6, gamma_offset=0.0, *, normalized_shape=None)
                                                  torch.ops.rmsnorm_backward.rms_norm (the forward)
                                                  with autograd: its backward runs the operator
    add_rms_norm(x, residual, gamma, eps=1e-6, gamma_offset=0.0) -> (y, x + residual)
                                                  torch.ops.rmsnorm_backward.add_rms_norm, the fused
                                                  residual add: its backward is one kernel pass (dres)
    RMSNorm(normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None, *, gamma_offset=0.0)
                                                  a torch.nn.RMSNorm subclass, a drop-in for it

CPU tensors run the kernel on the CPU twin; NPU tensors go through the C++ adapter in
framework/torch_npu_adapter (aclnnRmsNormBackward), when it is built.
"""
try:
    import torch  # noqa: F401
except ImportError as e:
    raise ImportError("rmsnorm_backward.torch needs PyTorch (pip install torch); "
                      "the rest of rmsnorm_backward works without it") from e

from . import _npu  # noqa: F401  registers the NPU kernel
from . import _sharding  # noqa: F401  registers the DTensor sharding rules
from ._op import rms_norm_backward
from .functional import rms_norm
from .fused import add_rms_norm
from .module import RMSNorm

__all__ = ["RMSNorm", "add_rms_norm", "rms_norm", "rms_norm_backward"]
