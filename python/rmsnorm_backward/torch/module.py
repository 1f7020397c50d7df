"""RMSNorm as an nn.Module: torch.nn.RMSNorm itself, with a forward whose backward is our operator."""
from __future__ import annotations

import torch

from .. import preflight
from ..errors import InvalidInputError
from .functional import rms_norm


class RMSNorm(torch.nn.RMSNorm):
    """A drop-in for torch.nn.RMSNorm: y = x / sqrt(mean(x^2) + eps) * (weight + offset), the mean over
    the trailing `normalized_shape` dims.

    Subclasses torch.nn.RMSNorm, so the constructor (positional forms included:
    ``RMSNorm([5], 1e-3, False)``), the `weight` parameter (shaped `normalized_shape`),
    `reset_parameters`, `extra_repr` and state dicts are torch's. As in torch, eps=None means
    torch.finfo(x.dtype).eps, and `normalized_shape` may be all of x's shape. The backward runs the
    RmsNormBackward kernel: on the CPU twin for CPU tensors, through aclnnRmsNormBackward on an NPU.

    offset (keyword only, default 0) is Gemma's and Megatron's zero-centred scale: the weight w
    scales by w + offset, added in fp32 by the kernel. The weight starts at 1 - offset, so a new
    module scales by 1 whatever the offset (Gemma's w starts at 0).

    With elementwise_affine=False there is no weight, and the backward runs the operator without
    gamma: no dgamma is computed, no partials or cross-core sync are spent.
    """

    def __init__(self, *args, offset: float = 0.0, **kwargs):
        self.offset = preflight.gamma_offset_value(offset, "offset")  # before reset_parameters reads it
        super().__init__(*args, **kwargs)
        if self.weight is None and self.offset != 0.0:
            raise InvalidInputError(f"offset must be 0 without a weight (elementwise_affine=False; got {offset!r}).")

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.weight is not None and self.offset != 0.0:
            with torch.no_grad():
                self.weight.sub_(self.offset)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", offset={self.offset}" if self.offset != 0.0 else "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None:
            return rms_norm(x, None, self.eps, normalized_shape=self.normalized_shape)
        return rms_norm(x, self.weight, self.eps, self.offset)
