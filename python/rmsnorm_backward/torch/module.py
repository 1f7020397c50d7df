"""RMSNorm as an nn.Module: torch.nn.RMSNorm itself, with a forward whose backward is our operator."""
from __future__ import annotations

import torch

from .functional import rms_norm


class RMSNorm(torch.nn.RMSNorm):
    """A drop-in for torch.nn.RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight, the mean over the
    trailing `normalized_shape` dims.

    Subclasses torch.nn.RMSNorm, so the constructor (positional forms included:
    ``RMSNorm([5], 1e-3, False)``), the `weight` parameter (ones at first, shaped `normalized_shape`),
    `reset_parameters`, `extra_repr` and state dicts are torch's. As in torch, eps=None means
    torch.finfo(x.dtype).eps, and `normalized_shape` may be all of x's shape. The backward runs the
    RmsNormBackward kernel: on the CPU twin for CPU tensors, through aclnnRmsNormBackward on an NPU.

    With elementwise_affine=False there is no weight: for now the kernel still gets a gamma, of
    ones in x's dtype, and the dgamma it computes is dropped (the operator has no form without gamma
    yet), so the backward costs what an affine one does.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if weight is None:
            weight = torch.ones(self.normalized_shape, dtype=x.dtype, device=x.device)
        return rms_norm(x, weight, self.eps)
