# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark suites: shapes (x's shape, gamma = its last dim) and dtypes."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..op_def import DTYPES as _OP_DTYPES

DTYPES = tuple(d.short for d in _OP_DTYPES.values())  # fp16, fp32, bf16


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dtype: str

    @property
    def cols(self) -> int:
        return self.shape[-1]

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:-1])

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape)) + " " + self.dtype


def _grid(rows, cols, dtypes=DTYPES) -> list[Case]:
    return [Case((r, c), d) for r in rows for c in cols for d in dtypes]


SUITES = {
    # LLM hidden sizes at two token counts.
    "llm": _grid((4096, 16384), (4096, 5120, 7168, 8192, 12288, 16384)),
    # Small rows: many rows per vector instruction or lanes go to waste.
    "small": _grid((2**20, 2**21), (32, 48, 64, 128)),
    # The fp16 cases ATB publishes baselines for.
    "atb": [Case(s, "fp16") for s in ((32, 32, 32, 32, 48), (48, 32, 48, 32), (32, 32, 48), (48, 32, 48, 32, 32))],
    # Mid widths at a mid token count: rows in UB, between the small and the LLM cases.
    "mid": _grid((16384,), (256, 512, 1024, 2048)),
}
SUITES["all"] = SUITES["llm"] + SUITES["small"] + SUITES["atb"] + SUITES["mid"]


def suite(name: str, dtypes=None) -> list[Case]:
    """The cases of suite `name`, optionally only those of the given dtypes."""
    from rmsnorm_backward.errors import InvalidInputError

    if name not in SUITES:
        raise InvalidInputError(f"suite must be one of {', '.join(SUITES)}, got {name!r}")
    if dtypes is not None:
        bad = sorted(set(dtypes) - set(DTYPES))
        if bad:
            raise InvalidInputError(f"dtype must be among {', '.join(DTYPES)}, got {', '.join(bad)}")
    return [c for c in SUITES[name] if dtypes is None or c.dtype in dtypes]


def suite_of(row: dict) -> str:
    """The suite a bench row's case belongs to ("other" for a case no suite lists)."""
    case = Case(tuple(row["shape"]), row["dtype"])
    return next((name for name, cases in SUITES.items() if name != "all" and case in cases), "other")
