# SPDX-License-Identifier: BSD-3-Clause
"""DTensor sharding rules of the three operators, so tensor and sequence parallelism (SequenceParallel)
run them on each rank's rows.

A row is normalised on its own: x, y, the residual stream, rstd, dy, dx and dres may be sharded on any
dim before the normalised ones, all on the same dim; gamma is replicated; dgamma, a sum over rows, is
Partial (each rank's rows' share, summed when it is redistributed). Replicated everything is always
allowed. Registered only where torch has torch.distributed.
"""
from __future__ import annotations

import torch

from .. import attrs
from ._op import rms_norm_backward
from .functional import rms_norm_forward
from .fused import add_rms_norm_forward


def _row_dims(x, normalised: int) -> range:
    return range(x.ndim - normalised)


def register() -> None:
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    def maybe(t, placement):  # an absent optional tensor has no placement
        return None if t is None else placement

    @register_sharding(rms_norm_forward._opoverload)
    def _forward(x, gamma, eps, gamma_offset=attrs.GAMMA_OFFSET, ndim=0, casting="fp32"):
        normalised = ndim if gamma is None else gamma.ndim
        rules = [([Replicate(), Replicate()], [Replicate(), maybe(gamma, Replicate()), None, None, None, None])]
        for d in _row_dims(x, normalised):
            rules.append(([Shard(d), Shard(d)], [Shard(d), maybe(gamma, Replicate()), None, None, None, None]))
        return rules

    @register_sharding(add_rms_norm_forward._opoverload)
    def _fused(x, residual, gamma, eps, gamma_offset=attrs.GAMMA_OFFSET, casting="fp32"):
        rules = [([Replicate()] * 3, [Replicate()] * 3 + [None] * 3)]
        for d in _row_dims(x, gamma.ndim):
            rules.append(([Shard(d)] * 3, [Shard(d), Shard(d), Replicate(), None, None, None]))
        return rules

    @register_sharding(rms_norm_backward._opoverload)
    def _backward(dy, x, rstd, gamma=None, dres=None, gamma_offset=attrs.GAMMA_OFFSET):
        # without gamma, the normalised dims are rstd's trailing 1s (a row dim of size 1 among them
        # only leaves that dim unsharded)
        normalised = gamma.ndim if gamma is not None else next(
            k for k in range(rstd.ndim, -1, -1) if all(n == 1 for n in rstd.shape[rstd.ndim - k:]))
        rules = [([Replicate(), Replicate()], [Replicate()] * 3 + [maybe(gamma, Replicate()), maybe(dres, Replicate()), None])]
        for d in _row_dims(x, normalised):
            rules.append(([Shard(d), Partial()],
                          [Shard(d)] * 3 + [maybe(gamma, Replicate()), maybe(dres, Shard(d)), None]))
        return rules


if torch.distributed.is_available():
    register()
