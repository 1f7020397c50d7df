"""Checks that run before anything is allocated: the operator's rules on shapes and dtypes alone
(the C++ plain tiling, the code CANN's TilingFunc runs) and the host memory a request will need.

Every entry point (the CLI's golden, simulate, the torch op and its fake) calls these first, on
shapes only, so a request that cannot work is refused in one sentence, in microseconds, before an
array is made or a broadcast view is densified.
"""
from __future__ import annotations

import copy
import functools
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Optional

from . import resources
from .errors import InvalidInputError

NAMES = ("dy", "x", "rstd", "gamma", "dres")
OPTIONAL = ("gamma", "dres")  # absent: a None shape (gamma: the scale is 1; dres: nothing added to dx)
_INT64_MAX = 2**63 - 1
# Float64 arrays of rows x cols that golden() holds at its peak (dy, x, x*rstd, dy*gamma, a product,
# dx): what makes it by far the largest user of memory of a golden run.
GOLDEN_F64_ARRAYS = 6


# Tiling decisions kept per (shapes, dtypes, soc, block_dim): the torch layer asks for the same one
# in rms_norm's forward check, its backward's kernel and again at every step of a training loop.
TILING_CACHE_SIZE = 256


FLOAT32_MAX = 3.4028234663852886e38


def gamma_offset_value(gamma_offset, name: str = "gamma_offset") -> float:
    """The gamma_offset attribute as a Python float, or InvalidInputError naming it as `name`: a real
    number, finite in float32 (the operator holds it as a float32: the kernel adds float32(offset)).
    Plain Python, so torch.compile traces it."""
    if isinstance(gamma_offset, bool) or not isinstance(gamma_offset, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number (got {gamma_offset!r}).")
    value = float(gamma_offset)
    if not (math.isfinite(value) and abs(value) <= FLOAT32_MAX):
        raise InvalidInputError(f"{name} must be finite in float32 (got {gamma_offset!r}).")
    return value


def tiling(shapes: Mapping[str, Sequence[int]], dtypes: Mapping[str, str], *, gamma_offset: float = 0.0,
           soc: str = "Ascend910B2", block_dim: Optional[int] = None) -> dict:
    """The C++ tiling's verdict on these shapes and dtype names (dy, x, rstd, gamma) and the
    gamma_offset attribute: its dict (a copy of the cached one: the search runs once per distinct
    request), or InvalidInputError with its sentence."""
    gamma_offset = gamma_offset_value(gamma_offset)
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
    return copy.deepcopy(_decision(key, gamma_offset, str(soc), int(block_dim or 0)))


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


def available_host_bytes() -> Optional[int]:
    """What the kernel would let this process allocate now without swapping (MemAvailable); None
    when the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def require_host_memory(need: int, what: str) -> None:
    """InvalidInputError when `what` needs more host memory (an estimate, `need` bytes) than is
    available: one sentence with both figures, instead of a MemoryError or the OOM killer later."""
    available = available_host_bytes()
    if available is not None and need > available:
        raise InvalidInputError(f"{what} needs about {_gib(need)} of host memory, more than the {_gib(available)} "
                                "available here; use smaller shapes.")


def elements(shape: Optional[Sequence[int]]) -> int:
    """Elements of a shape (0 for an absent tensor's None)."""
    return 0 if shape is None else math.prod(int(d) for d in shape)


def simulate_bytes(shapes: Mapping[str, Sequence[int]], itemsizes: Mapping[str, int], tiling_dict: dict,
                   dense_already: Mapping[str, bool]) -> int:
    """Peak host bytes of simulate(): a dense copy of each input that is not dense already, the
    guarded GM copy of every input, dx and dgamma each with its guarded copy, and the workspace."""
    need = 0
    for name in NAMES:
        nbytes = elements(shapes.get(name)) * itemsizes.get(name, 0)
        need += nbytes * (1 if dense_already.get(name, False) else 2)
    need += 2 * elements(shapes["x"]) * itemsizes["x"] + 2 * elements(shapes.get("gamma")) * 4
    return need + 2 * int(tiling_dict["workspace_bytes"])


def golden_bytes(shapes: Mapping[str, Sequence[int]]) -> int:
    """Peak host bytes of golden() on these shapes (its float64 temporaries)."""
    return GOLDEN_F64_ARRAYS * 8 * elements(shapes["x"])


def golden_run(shapes: Mapping[str, Sequence[int]], dtypes: Mapping[str, str], *, soc: str,
               gamma_offset: float = 0.0) -> dict:
    """The checks of a whole golden run (inputs made, golden, the twin's run, the comparison) on
    shapes and dtype names: the tiling's dict, or InvalidInputError before any array exists."""
    from . import op_def

    found = tiling(shapes, dtypes, gamma_offset=gamma_offset, soc=soc)
    itemsizes = {n: op_def.DTYPES[dtypes[n]].numpy().itemsize if shapes.get(n) is not None else 0 for n in NAMES}
    inputs = sum(elements(shapes.get(n)) * itemsizes[n] for n in NAMES)
    need = inputs + golden_bytes(shapes) + simulate_bytes(shapes, itemsizes, found, {n: True for n in NAMES})
    require_host_memory(need, f"golden on x {list(shapes['x'])} {dtypes['x']}")
    return found
