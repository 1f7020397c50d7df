# SPDX-License-Identifier: BSD-3-Clause
"""Torch tensors <-> NumPy arrays, without touching how the caller's storage may be used later.

In: a NumPy view of a tensor's memory through DLPack (np.from_dlpack), never Tensor.numpy(), which
marks the tensor's storage non-resizable for good: FSDP frees and re-allocates parameter and gradient
storage by resizing it, so a weight, an input or a grad once seen by the kernel would break it.
NumPy has no bfloat16 of its own: a bf16 tensor is viewed as int16 (same bytes) and reinterpreted as
ml_dtypes.bfloat16, the type the twin's Python side uses. Only a tensor whose elements are not laid
out densely in row-major order (a transpose, a slice, an expanded zero-stride grad) is copied, because
the kernel reads GM as one dense buffer; as_numpy leaves that copy to the caller (simulate makes it
after checking the shapes).

Out: a tensor with storage of its own (torch's allocator, resizable as any other), the array copied in.
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

        return np.from_dlpack(t.view(torch.int16)).view(ml_dtypes.bfloat16)
    return np.from_dlpack(t)


def from_numpy(a: np.ndarray) -> torch.Tensor:
    """A torch-owned tensor holding `a`'s values (bf16 arrays come back as torch.bfloat16)."""
    if a.dtype.name == "bfloat16":
        return torch.tensor(a.view(np.int16)).view(torch.bfloat16)
    return torch.tensor(a)
