# SPDX-License-Identifier: BSD-3-Clause
"""The operator's rules on shapes, dtypes and attributes, asked of the C++ plain tiling (op_host/tiling,
the code CANN's TilingFunc runs) through the extension rmsnorm_backward._tiling, and its decisions.

Every entry point (the CLI's golden, simulate, the torch op and its fake) asks here first, on shapes
only, so a request that cannot work is refused in one sentence, in microseconds, before an array is
made or a broadcast view is densified. Decisions are cached per request.
"""
from __future__ import annotations

import copy
import functools
import numbers
from collections.abc import Mapping, Sequence
from typing import Optional

from . import attrs, op_def, resources
from .errors import InvalidInputError

NAMES = ("dy", "x", "rstd", "gamma", "dres")
OPTIONAL = ("gamma", "dres")  # absent: a None shape (gamma: the scale is 1; dres: nothing added to dx)
_INT64_MAX = 2**63 - 1
DEFAULT_SOC = op_def.load().reference_soc  # the SoC a call names none of runs on (the tiling's reference)

# Tiling decisions kept per (shapes, dtypes, gamma_offset, soc, block_dim): the torch layer asks for the
# same one in rms_norm's forward check, its backward's kernel and again at every step of a training loop.
TILING_CACHE_SIZE = 256


def tiling(shapes: Mapping[str, Sequence[int]], dtypes: Mapping[str, str], *,
           gamma_offset: float = attrs.GAMMA_OFFSET, soc: str = DEFAULT_SOC, block_dim: Optional[int] = None) -> dict:
    """The C++ tiling's verdict on these shapes and dtype names (dy, x, rstd, gamma, dres) and the
    gamma_offset attribute (a float, as attrs.check returns it; the tiling holds its value rules):
    its dict (a copy of the cached one: the search runs once per distinct request), or
    InvalidInputError with its sentence."""
    shapes, dtypes = dict(shapes), dict(dtypes)
    for name in OPTIONAL:
        if shapes.get(name) is None:
            shapes[name], dtypes[name] = None, ""
    if block_dim is not None and (isinstance(block_dim, bool) or not isinstance(block_dim, numbers.Integral)
                                  or block_dim < 1):
        raise InvalidInputError(f"block_dim must be a positive integer or None (got {block_dim!r}).")
    for name in NAMES:
        if shapes[name] is not None and any(int(d) > _INT64_MAX for d in shapes[name]):
            raise InvalidInputError(f"{name}'s shape {list(shapes[name])} has a dim that does not fit in int64.")
    key = tuple((None if shapes[n] is None else tuple(int(d) for d in shapes[n]), str(dtypes[n])) for n in NAMES)
    return copy.deepcopy(_decision(key, float(gamma_offset), str(soc), int(block_dim or 0)))


@functools.lru_cache(maxsize=TILING_CACHE_SIZE)
def _decision(key: tuple, gamma_offset: float, soc: str, block_dim: int) -> dict:
    kwargs = {f"{n}_shape": None if shape is None else list(shape) for n, (shape, _) in zip(NAMES, key)}
    kwargs.update({f"{n}_dtype": dtype for n, (_, dtype) in zip(NAMES, key)})
    return resources.extension().compute_tiling(**kwargs, gamma_offset=gamma_offset, soc=soc, block_dim=block_dim)


def check_outputs(shapes: Mapping[str, Sequence[int]], dtypes: Mapping[str, str]) -> None:
    """The tiling's rules (CheckOutputs, as CANN's TilingFunc runs them) on dx and dgamma of these
    shapes and dtype names beside x and gamma (absent: no gamma): None, or InvalidInputError."""
    gamma = shapes.get("gamma")
    resources.extension().check_outputs(
        x_shape=list(shapes["x"]), x_dtype=str(dtypes["x"]), gamma_shape=None if gamma is None else list(gamma),
        dx_shape=list(shapes["dx"]), dx_dtype=str(dtypes["dx"]), dgamma_shape=list(shapes["dgamma"]),
        dgamma_dtype=str(dtypes["dgamma"]))


def clear_tiling_cache() -> None:
    """Forget every cached tiling decision (the next request runs the search again)."""
    _decision.cache_clear()
