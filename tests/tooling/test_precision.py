# SPDX-License-Identifier: BSD-3-Clause
"""precision.compare against hand-made cases: the standard of docs/design.md section 4, edge by edge."""
import ml_dtypes
import numpy as np
import pytest

from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.precision import TOLERANCES, compare

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"fp16": np.dtype(np.float16), "bf16": BF16, "fp32": np.dtype(np.float32)}


def golden_values(rng, n=4096):
    """float64 values of both signs spanning several binades, away from zero (relative errors matter)."""
    return rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 8.0, n)


def one_ulp_up(values):
    """Each element moved to the next representable value toward +inf, in its own dtype."""
    bits = values.view(np.uint16 if values.itemsize == 2 else np.uint32).copy()
    negative = values.astype(np.float64) < 0
    bits[negative] -= 1
    bits[~negative] += 1
    return bits.view(values.dtype)


@pytest.mark.parametrize("short", ["fp16", "bf16", "fp32"])
def test_golden_rounded_to_dtype_passes_exactly(short):
    g = golden_values(np.random.default_rng(1))
    report = compare(g.astype(DTYPES[short]), g, short)
    assert report.passed
    assert report.failed_elements == 0
    assert report.max_abs_err == 0.0 and report.worst_index is None
    assert report.max_ulp == (0 if DTYPES[short].itemsize == 2 else None)


@pytest.mark.parametrize("short", ["fp16", "fp32"])
def test_one_ulp_off_everywhere_passes_for_fp16_and_fp32(short):
    g = golden_values(np.random.default_rng(2))
    actual = one_ulp_up(g.astype(DTYPES[short]))
    report = compare(actual, g, short)
    assert report.passed, str(report)
    assert report.max_abs_err > 0
    if short == "fp16":
        assert report.max_ulp == 1


def test_bf16_one_ulp_off_passes_on_few_elements_and_fails_on_many():
    # One bf16 ulp near 1..8 is 2^-7..2^-4 relative 3.9e-3..7.8e-3: over both tolerances for many
    # values, so the count rule decides.
    g = golden_values(np.random.default_rng(3), n=10000)
    rounded = g.astype(BF16)
    bumped = one_ulp_up(rounded)
    few = rounded.copy()
    few[:40] = bumped[:40]  # 40 = rtol x size
    assert compare(few, g, "bf16").passed
    assert compare(few, g, "bf16").max_ulp == 1
    many = rounded.copy()
    many[:2000] = bumped[:2000]
    report = compare(many, g, "bf16")
    assert not report.passed
    assert report.failed_elements > 40


@pytest.mark.parametrize("short", ["fp16", "bf16", "fp32"])
def test_systematically_wrong_result_fails(short):
    g = golden_values(np.random.default_rng(4))
    atol, rtol = TOLERANCES[np.dtype(DTYPES[short]).name]
    actual = (g * (1 + 3 * rtol)).astype(DTYPES[short])
    report = compare(actual, g, short)
    assert not report.passed
    assert report.failed_elements > 0.9 * g.size
    assert report.max_rel_err > 2 * rtol


def test_fp32_relative_error_just_inside_and_outside_rtol():
    g = golden_values(np.random.default_rng(5))
    assert compare((g * (1 + 5e-5)).astype(np.float32), g, "fp32").passed
    assert not compare((g * (1 + 2e-4)).astype(np.float32), g, "fp32").passed


def test_small_values_pass_on_absolute_error_alone():
    g = np.full(1000, 1e-6)
    actual = np.full(1000, 5e-4, dtype=np.float16)  # 500x off relatively, 5e-4 absolutely
    report = compare(actual, g, "fp16")
    assert report.passed
    assert report.failed_elements == 0
    assert report.max_rel_err > 100


def test_failure_count_threshold_is_rtol_times_size():
    g = golden_values(np.random.default_rng(6), n=20000)  # fp32: 2 failures allowed
    actual = g.astype(np.float32)
    actual[[10, 20]] *= 2
    report = compare(actual, g, "fp32")
    assert report.failed_elements == 2 and report.allowed_failures == pytest.approx(2.0)
    assert report.passed
    actual[30] *= 2
    assert not compare(actual, g, "fp32").passed


def test_worst_index_names_the_worst_element():
    g = golden_values(np.random.default_rng(7)).reshape(64, 64)
    actual = g.astype(np.float16)
    actual[17, 5] = actual[17, 5] * np.float16(1.5)
    actual[3, 3] = actual[3, 3] * np.float16(1.1)
    assert compare(actual, g, "fp16").worst_index == (17, 5)


def test_nan_where_golden_is_finite_fails_even_within_the_count():
    g = golden_values(np.random.default_rng(8), n=100000)  # fp16 allows 100 failures
    actual = g.astype(np.float16)
    actual[123] = np.nan
    report = compare(actual, g, "fp16")
    assert not report.passed
    assert report.nan_inf_mismatches == 1
    assert report.worst_index == (123,)


@pytest.mark.parametrize(("got", "want", "ok"), [
    (np.nan, np.nan, True),
    (np.inf, np.inf, True),
    (-np.inf, -np.inf, True),
    (np.inf, -np.inf, False),
    (np.nan, np.inf, False),
    (1.0, np.nan, False),
    (np.inf, 1.0, False),
])
def test_nan_and_inf_must_match_the_golden(got, want, ok):
    g = np.full(10, 2.0)
    g[4] = want
    actual = g.astype(np.float32)
    actual[4] = got
    report = compare(actual, g, "fp32")
    assert report.passed is ok
    assert report.nan_inf_mismatches == (0 if ok else 1)


def test_golden_overflowing_the_dtype_compares_as_inf():
    g = np.array([1.0, 70000.0])  # 70000 rounds to +inf in fp16, as the kernel's cast does
    assert compare(np.array([1.0, np.inf], dtype=np.float16), g, "fp16").passed
    assert not compare(np.array([1.0, 65504.0], dtype=np.float16), g, "fp16").passed


def test_ulp_distance_counts_across_zero():
    smallest = np.float16(2.0 ** -24)
    actual = np.array([-smallest, 1.0], dtype=np.float16)
    g = np.array([smallest, 1.0])
    assert compare(actual, g, "fp16").max_ulp == 2


def test_dgamma_compares_with_the_unrounded_float64_sums():
    g = np.array([1.0 + 2.0 ** -30] * 8)
    actual = np.ones(8, dtype=np.float32)
    rounded = compare(actual, g, "fp32")
    unrounded = compare(actual, g, "fp32", round_golden=False)
    assert rounded.max_abs_err == 0.0
    assert unrounded.max_abs_err == pytest.approx(2.0 ** -30)
    assert unrounded.passed


def test_empty_arrays_pass():
    report = compare(np.zeros((0, 128), dtype=np.float16), np.zeros((0, 128)), "fp16")
    assert report.passed and report.size == 0


def test_wrong_actual_dtype_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="actual has dtype float32; it must be float16"):
        compare(np.zeros(4, np.float32), np.zeros(4), "fp16")


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="shape"):
        compare(np.zeros(4, np.float32), np.zeros(5), "fp32")


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="dtype 'int8' is not one of"):
        compare(np.zeros(4, np.int8), np.zeros(4), "int8")


def test_report_serialises_and_reads():
    g = golden_values(np.random.default_rng(9))
    report = compare((g * 1.01).astype(np.float16), g, "fp16")
    d = report.to_dict()
    assert d["passed"] is False and d["dtype"] == "float16" and isinstance(d["worst_index"], list)
    assert str(report).startswith("FAIL float16[4096]")
