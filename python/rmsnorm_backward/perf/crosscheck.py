"""A backward's results against the float64 golden at any size: the golden computed and compared a
block of rows at a time (a bench case of 16384 x 16384 would need gigabytes of float64 at once), the
blocks' precision reports merged into one per output exactly as one comparison of the whole would
give (precision.compare's standard: dx against the golden rounded to its dtype, dgamma against the
float64 sums).

    result = crosscheck.check(dy, x, rstd, gamma, dx, dgamma)
    result["passed"], result["dx"]["max_rel_err"], result["dgamma"]["failed_elements"]
"""
from __future__ import annotations

import numpy as np

from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import PrecisionReport, compare

BLOCK_ELEMENTS = 1 << 22  # elements of x per block: a few float64 arrays of 32 MB


def merge(reports: list[PrecisionReport], offsets: list[int]) -> PrecisionReport:
    """One report of row blocks compared apart (`offsets`: each block's first row): counts add up,
    maxima are the largest, the worst element is the worst block's, the verdict is the whole's."""
    first = reports[0]
    size = sum(r.size for r in reports)
    failed = sum(r.failed_elements for r in reports)
    mismatches = sum(r.nan_inf_mismatches for r in reports)
    worst_block = next((i for i, r in enumerate(reports) if r.nan_inf_mismatches), None)
    if worst_block is None:
        worst_block = max(range(len(reports)), key=lambda i: reports[i].max_rel_err)
    worst = reports[worst_block].worst_index
    if worst is not None:
        worst = (worst[0] + offsets[worst_block], *worst[1:])
    ulps = [r.max_ulp for r in reports if r.max_ulp is not None]
    return PrecisionReport(
        dtype=first.dtype, size=size, atol=first.atol, rtol=first.rtol, failed_elements=failed,
        allowed_failures=first.rtol * size, nan_inf_mismatches=mismatches,
        max_abs_err=max(r.max_abs_err for r in reports), max_rel_err=max(r.max_rel_err for r in reports),
        max_ulp=max(ulps) if ulps else None, worst_index=worst,
        passed=mismatches == 0 and failed <= first.rtol * size)


def check(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray, dx: np.ndarray,
          dgamma: np.ndarray) -> dict:
    """dx and dgamma of dy, x, rstd, gamma against the golden: {"dx": report, "dgamma": report,
    "passed": both}, each report as PrecisionReport.to_dict()."""
    cols = gamma.size
    rows = x.size // cols
    views = [a.reshape(rows, cols) for a in (dy, x, dx)]
    r = rstd.reshape(rows)
    step = max(1, BLOCK_ELEMENTS // max(cols, 1))
    reports, offsets = [], []
    if rows == 0:
        reports, offsets = [compare(views[2], golden(views[0], views[1], r, gamma.reshape(cols))[0], x.dtype.name)], [0]
    total = np.zeros(cols, dtype=np.float64)
    flat_gamma = gamma.reshape(cols)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        block_dx, block_dgamma = golden(views[0][start:stop], views[1][start:stop], r[start:stop], flat_gamma)
        reports.append(compare(views[2][start:stop], block_dx, x.dtype.name))
        offsets.append(start)
        total += block_dgamma
    dx_report = merge(reports, offsets)
    dgamma_report = compare(dgamma.reshape(cols), total, "float32", round_golden=False)
    return {"dx": dx_report.to_dict(), "dgamma": dgamma_report.to_dict(),
            "passed": dx_report.passed and dgamma_report.passed}
