# SPDX-License-Identifier: BSD-3-Clause
"""Ascend precision standards against the float64 golden (docs/design.md section 4).

An element fails when its absolute error exceeds atol AND its relative error exceeds rtol; a case
fails when more than rtol x size elements fail, or when any NaN/Inf of the result differs from the
golden's. The golden is first rounded to the result's dtype (dx), unless round_golden=False (dgamma:
compared with the float64 sums themselves).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .errors import InvalidInputError
from .op_def import dtype_of

# (atol, rtol) per result dtype: fp16 "double thousandth", fp32 "double ten-thousandth".
TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (4e-3, 4e-3), "float32": (1e-4, 1e-4)}


@dataclass(frozen=True)
class PrecisionReport:
    dtype: str
    size: int
    atol: float
    rtol: float
    failed_elements: int          # finite elements over both tolerances
    allowed_failures: float       # rtol x size
    nan_inf_mismatches: int       # elements whose NaN/Inf status or sign of Inf differs
    max_abs_err: float            # over elements finite in both
    max_rel_err: float
    max_ulp: int | None           # 16-bit results only: largest distance in units in the last place
    worst_index: tuple | None     # largest relative error, or first NaN/Inf mismatch (None: exact)
    passed: bool

    def to_dict(self) -> dict:
        d = asdict(self)
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        return d

    def __str__(self) -> str:
        ulp = f", max ulp {self.max_ulp}" if self.max_ulp is not None else ""
        where = f", worst at {list(self.worst_index)}" if self.worst_index is not None else ""
        return (f"{'PASS' if self.passed else 'FAIL'} {self.dtype}[{self.size}]: "
                f"{self.failed_elements} failed (allowed {self.allowed_failures:g}), "
                f"{self.nan_inf_mismatches} NaN/Inf mismatches, max abs err {self.max_abs_err:.3g}, "
                f"max rel err {self.max_rel_err:.3g}{ulp}{where} (atol {self.atol:g}, rtol {self.rtol:g})")


def _ordered_bits(values: np.ndarray) -> np.ndarray:
    """16-bit floats as integers that count ulps monotonically (+0 and -0 both 0)."""
    bits = values.view(np.uint16).astype(np.int64)
    return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)


def compare(actual, golden, dtype, *, round_golden: bool = True) -> PrecisionReport:
    """Compare a device result `actual` (of `dtype`: fp16/fp32/bf16 or a NumPy dtype) with `golden`."""
    info = dtype_of(dtype)
    np_dtype = info.numpy()
    actual = np.asarray(actual)
    golden = np.asarray(golden)
    if actual.dtype != np_dtype:
        raise InvalidInputError(f"actual has dtype {actual.dtype}; it must be {info.name}, the dtype being compared")
    if actual.shape != golden.shape:
        raise InvalidInputError(f"actual's shape {actual.shape} must equal golden's shape {golden.shape}")
    if not np.issubdtype(golden.dtype, np.floating):
        raise InvalidInputError(f"golden has dtype {golden.dtype}; it must be a floating-point array")

    atol, rtol = TOLERANCES[info.name]
    with np.errstate(over="ignore"):  # a golden beyond the dtype's range rounds to Inf, as the device does
        expected_r = golden.astype(np_dtype) if round_golden else golden
    a = actual.astype(np.float64)
    e = expected_r.astype(np.float64)

    finite = np.isfinite(a) & np.isfinite(e)
    same_special = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    mismatch = ~finite & ~same_special

    with np.errstate(all="ignore"):
        abs_err = np.where(finite, np.abs(a - e), 0.0)
        rel_err = np.where(abs_err == 0, 0.0, abs_err / np.abs(e))
    failed = finite & (abs_err > atol) & (rel_err > rtol)

    worst = None
    if mismatch.any():
        worst = np.unravel_index(np.argmax(mismatch), a.shape)
    elif a.size and abs_err.max() > 0:
        worst = np.unravel_index(np.argmax(rel_err), a.shape)

    max_ulp = None
    if info.itemsize == 2 and round_golden:
        dist = np.abs(_ordered_bits(actual) - _ordered_bits(expected_r))
        max_ulp = int(dist[finite].max()) if finite.any() else 0

    n_failed = int(failed.sum())
    n_mismatch = int(mismatch.sum())
    return PrecisionReport(
        dtype=info.name,
        size=int(a.size),
        atol=atol,
        rtol=rtol,
        failed_elements=n_failed,
        allowed_failures=rtol * a.size,
        nan_inf_mismatches=n_mismatch,
        max_abs_err=float(abs_err.max()) if a.size else 0.0,
        max_rel_err=float(rel_err.max()) if a.size else 0.0,
        max_ulp=max_ulp,
        worst_index=tuple(int(i) for i in worst) if worst is not None else None,
        passed=n_mismatch == 0 and n_failed <= rtol * a.size,
    )
