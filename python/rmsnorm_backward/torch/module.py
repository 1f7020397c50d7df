"""RMSNorm as an nn.Module, a drop-in for torch.nn.RMSNorm whose backward is our operator."""
from __future__ import annotations

import numbers

import torch

from .functional import rms_norm


class RMSNorm(torch.nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight, the mean over the trailing `normalized_shape` dims.

    `weight` (gamma) has shape `normalized_shape` and starts at ones, like torch.nn.RMSNorm's, so state
    dicts move between the two. The backward pass runs the RmsNormBackward kernel: on the CPU twin
    for CPU tensors, through aclnnRmsNormBackward on an NPU.
    """

    def __init__(self, normalized_shape, eps: float = 1e-6, dtype=None, device=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps = float(eps)
        self.weight = torch.nn.Parameter(torch.ones(self.normalized_shape, dtype=dtype, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"
