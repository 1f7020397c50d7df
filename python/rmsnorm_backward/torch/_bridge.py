"""Torch tensors <-> NumPy arrays without copies where the memory allows it.

NumPy has no bfloat16 of its own: a bf16 tensor is viewed as int16 (same bytes) and reinterpreted as
ml_dtypes.bfloat16, the type the twin's Python side uses. Only a tensor whose elements are not laid
out densely in row-major order (a transpose, a slice, an expanded zero-stride grad) is copied, because
the kernel reads GM as one dense buffer; as_numpy leaves that copy to the caller (simulate makes it
after checking the shapes).
"""
from __future__ import annotations

import numpy as np
import torch


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of `t`'s memory (of a dense copy when `t` is not row-major contiguous)."""
    return as_numpy(t.contiguous())


def as_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of `t`'s memory with `t`'s strides, dense or not (an expanded tensor stays a
    broadcast view: nothing is copied, so its shape can be checked before it is densified)."""
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_numpy(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing `a`'s memory (bf16 arrays come back as torch.bfloat16)."""
    a = np.ascontiguousarray(a)
    if not a.flags.writeable:  # torch.from_numpy warns on read-only memory; own a copy instead
        a = a.copy()
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)
