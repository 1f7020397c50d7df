# SPDX-License-Identifier: BSD-3-Clause
"""Several results of one input set against the float64 golden, at any size, under precision.compare's
standard (dx against the golden rounded to its dtype, dgamma against the float64 sums).

    reference = crosscheck.Reference(dy, x, rstd, gamma, max_elements=1 << 22)
    result = reference.check(dx, dgamma)     # ours, CANN's atomic, CANN's deterministic, ...
    result["passed"], result["dx"]["max_rel_err"], result["dx_rows"]

The golden is computed once, a block of rows at a time (a bench case of 16384 x 16384 would need
gigabytes of float64 at once): dgamma summed over every row; dx kept for every row, or with
max_elements for a sample of at most that many elements: rows evenly spaced from the first to the
last, so every part of the row range (each core's share, each loop's tail) is looked at. The bench
checks a sample (comparing every element of its largest cases three times would take longer than
running them); the tests check every row.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare

BLOCK_ELEMENTS = 1 << 22  # elements of x per block of the golden: a few float64 arrays of 32 MB


class Reference:
    """The golden of dy, x, rstd, gamma: dgamma over every row, dx over every row or a sample."""

    def __init__(self, dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray,
                 max_elements: Optional[int] = None):
        self.cols = gamma.size
        self.rows = x.size // self.cols
        self.dtype = x.dtype.name
        if max_elements is None or self.rows * self.cols <= max_elements:
            self.sample = np.arange(self.rows)
        else:
            count = max(2, max_elements // self.cols)
            self.sample = np.unique(np.linspace(0, self.rows - 1, count).round().astype(np.int64))
        views = [a.reshape(self.rows, self.cols) for a in (dy, x)]
        r, g = rstd.reshape(self.rows), gamma.reshape(self.cols)
        step = max(1, BLOCK_ELEMENTS // max(self.cols, 1))
        self.dgamma = np.zeros(self.cols, dtype=np.float64)
        parts = []
        for start in range(0, self.rows, step):
            stop = min(self.rows, start + step)
            picked = self.sample[(self.sample >= start) & (self.sample < stop)] - start
            # dgamma needs every row of the block, dx only the picked ones
            block_dx, block_dgamma = golden(views[0][start:stop], views[1][start:stop], r[start:stop], g)
            parts.append(block_dx if len(picked) == stop - start else block_dx[picked])
            self.dgamma += block_dgamma
        self.dx = np.concatenate(parts) if parts else np.zeros((0, self.cols))

    def check(self, dx: np.ndarray, dgamma: np.ndarray) -> dict:
        """dx (its sampled rows) and dgamma against the golden: {"dx": report, "dgamma": report,
        "passed": both, "dx_rows": rows compared, "rows": rows in all}, each report as
        PrecisionReport.to_dict() with dx's worst index in rows of the whole."""
        dx_report = compare(dx.reshape(self.rows, self.cols)[self.sample], self.dx, self.dtype).to_dict()
        if dx_report["worst_index"] is not None:
            dx_report["worst_index"][0] = int(self.sample[dx_report["worst_index"][0]])
        dgamma_report = compare(dgamma.reshape(self.cols), self.dgamma, "float32", round_golden=False).to_dict()
        return {"dx": dx_report, "dgamma": dgamma_report, "passed": dx_report["passed"] and dgamma_report["passed"],
                "dx_rows": int(len(self.sample)), "rows": int(self.rows)}


def check(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray, dx: np.ndarray,
          dgamma: np.ndarray) -> dict:
    """dx over every row and dgamma against the golden (Reference(...).check)."""
    return Reference(dy, x, rstd, gamma).check(dx, dgamma)
