# SPDX-License-Identifier: BSD-3-Clause
"""The host memory a request needs, checked before anything is allocated: an estimate of the peak
bytes of simulate() and golden() from shapes alone, against what the system says is available, so a
request too large for this machine is refused in one sentence instead of a MemoryError or the OOM
killer later.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Optional

from . import attrs, host_tiling, op_def
from .errors import InvalidInputError

# Float64 arrays of rows x cols that golden() holds at its peak (dy, x, x*rstd, dy*gamma, a product,
# dx): what makes it by far the largest user of memory of a golden run.
GOLDEN_F64_ARRAYS = 6


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
    for name in host_tiling.NAMES:
        nbytes = elements(shapes.get(name)) * itemsizes.get(name, 0)
        need += nbytes * (1 if dense_already.get(name, False) else 2)
    need += 2 * elements(shapes["x"]) * itemsizes["x"] + 2 * elements(shapes.get("gamma")) * 4
    return need + 2 * int(tiling_dict["workspace_bytes"])


def golden_bytes(shapes: Mapping[str, Sequence[int]]) -> int:
    """Peak host bytes of golden() on these shapes (its float64 temporaries)."""
    return GOLDEN_F64_ARRAYS * 8 * elements(shapes["x"])


def golden_run(shapes: Mapping[str, Sequence[int]], dtypes: Mapping[str, str], *, soc: str,
               gamma_offset: float = attrs.GAMMA_OFFSET) -> dict:
    """The checks of a whole golden run (inputs made, golden, the twin's run, the comparison) on
    shapes and dtype names: the tiling's dict, or InvalidInputError before any array exists."""
    found = host_tiling.tiling(shapes, dtypes, gamma_offset=gamma_offset, soc=soc)
    itemsizes = {n: op_def.DTYPES[dtypes[n]].numpy().itemsize if shapes.get(n) is not None else 0 for n in host_tiling.NAMES}
    inputs = sum(elements(shapes.get(n)) * itemsizes[n] for n in host_tiling.NAMES)
    need = inputs + golden_bytes(shapes) + simulate_bytes(shapes, itemsizes, found, {n: True for n in host_tiling.NAMES})
    require_host_memory(need, f"golden on x {list(shapes['x'])} {dtypes['x']}")
    return found
