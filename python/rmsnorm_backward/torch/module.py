# SPDX-License-Identifier: BSD-3-Clause
"""RMSNorm as an nn.Module: torch.nn.RMSNorm itself, with a forward whose backward is our operator."""
from __future__ import annotations

import inspect

import torch

from .. import attrs
from .functional import rms_norm


class RMSNorm(torch.nn.RMSNorm):
    """A drop-in for torch.nn.RMSNorm: y = x / sqrt(mean(x^2) + eps) * (weight + gamma_offset), the mean over
    the trailing `normalized_shape` dims.

    Subclasses torch.nn.RMSNorm, so the constructor (positional forms included:
    ``RMSNorm([5], 1e-3, False)``), the `weight` parameter (shaped `normalized_shape`),
    `reset_parameters`, `extra_repr` and state dicts are torch's. As in torch, eps=None means
    torch.finfo(x.dtype).eps, and `normalized_shape` may be all of x's shape. The backward runs the
    RmsNormBackward kernel: on the CPU twin for CPU tensors, through aclnnRmsNormBackward on an NPU.

    gamma_offset (keyword only, op_def's default 0) is Gemma's and Megatron's zero-centred scale: the
    weight w scales by w + gamma_offset, added in fp32 by the kernel. The weight starts at
    1 - gamma_offset, so a new module scales by 1 whatever the offset (Gemma's w starts at 0).

    With elementwise_affine=False there is no weight, and the backward runs the operator without
    gamma: no dgamma is computed, no partials or cross-core sync are spent.
    """

    def __init__(self, *args, gamma_offset: float = attrs.GAMMA_OFFSET, **kwargs):
        # Checked before reset_parameters reads it; without a weight it must keep its default.
        affine = inspect.signature(torch.nn.RMSNorm.__init__).bind(self, *args, **kwargs)
        affine.apply_defaults()
        self.gamma_offset = attrs.check({"gamma_offset": gamma_offset},
                                        has_gamma=bool(affine.arguments["elementwise_affine"]))["gamma_offset"]
        super().__init__(*args, **kwargs)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.weight is not None and self.gamma_offset != attrs.GAMMA_OFFSET:
            with torch.no_grad():
                self.weight.sub_(self.gamma_offset - attrs.GAMMA_OFFSET)

    def extra_repr(self) -> str:
        changed = self.gamma_offset != attrs.GAMMA_OFFSET
        return super().extra_repr() + (f", gamma_offset={self.gamma_offset}" if changed else "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None:
            return rms_norm(x, None, self.eps, normalized_shape=self.normalized_shape)
        return rms_norm(x, self.weight, self.eps, self.gamma_offset)
