# SPDX-License-Identifier: BSD-3-Clause
"""Inputs whose every intermediate is exact in fp32, and the checks the precision standard's tolerance
cannot blur: shared by the kernel tests and the planted bugs (tests/ is on the import path through
the one conftest).

exact_inputs: dy, x and gamma are small integers, rstd = 1 + k * h per row (k odd, h half an ulp of
the dtype at 1: 2^-11 for fp16, 2^-8 for bf16 and, since fp32 has no rounding on the way out, 2^-11
for fp32 too). x's nonzero columns come in pairs with the same dy and gamma and opposite signs, so
every partial sum of g*xhat over a row is exact and the row's sum is exactly 0, in any order the
kernel adds. Then mean(g*xhat) = 0 and dx = rstd*dy*gamma, exact in fp32 (4-bit times 12-bit
mantissas), and wherever |dy*gamma| is a power of two dx lies exactly halfway between two 16-bit
neighbours: a tie that only round-to-nearest-even rounds the documented way. dgamma = sum over rows
of dy*x*rstd has at most 22 significant bits in every partial sum, so it is exact too. The golden,
rounded to dx's dtype (NumPy and ml_dtypes round to nearest even: fp16 RNE, bf16 CAST_RINT), must
then be met to 0 ulp, dx and dgamma.

exact_dres: the residual gradient for those inputs, multiples of 1/4 in [-4, 4], so dx + dres is exact
in fp32 too and lands in a lower binade for many elements: a kernel that rounds dx to 16 bits before
adding dres (two roundings) misses the once-rounded golden there by an ulp.

tail_failures: elements over both tolerances in the last 128 lanes of every row (its last 64-lane
fp32 repeat and last 128-lane 16-bit repeat), where a wrong repeat count or mask shows up in a few
lanes per row, too few for the standard's allowance of rtol x size failed elements. An element one
ulp from the rounded golden does not count: the fp32 result rounded to 16 bits may land on the other
neighbour of a value the float64 golden rounds (for bf16 one ulp is 2^-7 relative, over the 4e-3
tolerance), which is exactly what the standard's allowance is for; a lane the kernel skipped or
computed wrong is many ulps off.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import TOLERANCES

NUMPY = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}
HALF_ULP_AT_ONE = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-11}
PAIRS_PER_ROW = 64  # nonzero x pairs: |partial sums of dy*gamma*x| <= 64 * 2 * 18 < 2^12


def exact_inputs(rng: np.random.Generator, rows: int, cols: int, dtype: str):
    """dy, x, rstd (rows, 1), gamma of `dtype` built as the module docstring says."""
    half = cols // 2
    dy = rng.integers(-3, 4, (rows, cols)).astype(np.float64)
    gamma = rng.integers(1, 4, cols).astype(np.float64) * rng.choice([-1.0, 1.0], cols)
    x = np.zeros((rows, cols))
    pairs = min(half, PAIRS_PER_ROW)
    for r in range(rows):
        lead = rng.choice(half, pairs, replace=False)
        x[r, lead] = rng.choice([-2.0, -1.0, 1.0, 2.0], pairs)
    # Column half + j mirrors column j: the same dy and gamma, x negated; an odd last column has x = 0.
    dy[:, half:2 * half] = dy[:, :half]
    gamma[half:2 * half] = gamma[:half]
    x[:, half:2 * half] = -x[:, :half]
    order = rng.permutation(cols)  # pairs land anywhere in the row, not only in its two halves
    dy, x, gamma = dy[:, order], x[:, order], gamma[order]
    rstd = 1.0 + rng.choice([1, 3, 5, 7], (rows, 1)) * HALF_ULP_AT_ONE[dtype]
    t = NUMPY[dtype]
    return dy.astype(t), x.astype(t), rstd.astype(np.float32), gamma.astype(t)


def exact_dres(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """dres of x's shape and dtype as the module docstring says."""
    return (rng.integers(-16, 17, x.shape) / 4.0).astype(x.dtype)


def assert_exact(dx, dgamma, dy, x, rstd, gamma, what: str = "", dres=None):
    """dx equal to the golden rounded to its dtype and dgamma equal to the float64 golden, 0 ulp."""
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma, dres=dres)
    assert (golden_dgamma.astype(np.float32) == golden_dgamma).all(), "the case's dgamma is not exact in fp32"
    expected = golden_dx.astype(dx.dtype).astype(np.float64)
    wrong = np.flatnonzero(dx.astype(np.float64).ravel() != expected.ravel())
    assert wrong.size == 0, (f"{what}dx differs from the rounded golden in {wrong.size} elements, first at flat "
                             f"{wrong[0]}: {dx.ravel()[wrong[0]]!r} != {expected.ravel()[wrong[0]]!r}")
    wrong = np.flatnonzero(dgamma.astype(np.float64).ravel() != golden_dgamma.ravel())
    assert wrong.size == 0, (f"{what}dgamma differs from the golden in {wrong.size} elements, first at "
                             f"{wrong[0]}: {dgamma.ravel()[wrong[0]]!r} != {golden_dgamma.ravel()[wrong[0]]!r}")


def tail_failures(dx, golden_dx, dtype: str) -> int:
    """Elements of the last 128 lanes of every row of dx that fail the standard and are more than one
    ulp from the golden rounded to dx's dtype (NaN/Inf mismatches count too)."""
    cols = dx.shape[-1]
    begin = (cols - 1) // 128 * 128
    actual = np.ascontiguousarray(dx.reshape(-1, cols)[:, begin:])
    with np.errstate(over="ignore"):
        expected = golden_dx.reshape(-1, cols)[:, begin:].astype(actual.dtype)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    atol, rtol = TOLERANCES[dtype]
    with np.errstate(all="ignore"):
        abs_err = np.abs(a - e)
        over = (abs_err > atol) & (abs_err > rtol * np.abs(e))
    unsigned = {2: np.uint16, 4: np.uint32}[actual.dtype.itemsize]
    sign = np.int64(1) << (8 * actual.dtype.itemsize - 1)

    def ordered(v):  # integers that count ulps monotonically, +0 and -0 both 0
        bits = v.view(unsigned).astype(np.int64)
        return np.where(bits & sign, -(bits & (sign - 1)), bits)

    far = np.abs(ordered(actual) - ordered(expected)) > 1
    finite = np.isfinite(a) & np.isfinite(e)
    special = ~finite & ~((np.isnan(a) & np.isnan(e)) | (a == e))
    return int((finite & over & far).sum() + special.sum())
