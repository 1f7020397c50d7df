# SPDX-License-Identifier: BSD-3-Clause
"""Compare / Compares / Compare into CmpMask + GetCmpMask / Select of the twin
(twin/include/twin/compare_select.h) against NumPy, then one test per enforced rule."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import run_elementwise

MODES = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal,
         "NE": np.not_equal}

def launch(dtype, n, call, a, b, pick=0):
    """Runs `call` (or calls[pick]) on x = a, y = b (n elements of dtype) with the result bytes in d
    (n uint8, zeroed)."""
    return run_elementwise(call, a.astype(dtype), b.astype(dtype), np.zeros(n, np.uint8), pick=pick)


def per_mode(template):
    """The call for every CMPMODE, compiled into one kernel: a test picks its mode's."""
    return tuple(template.format(mode=mode) for mode in MODES)


def random_with_ties(rng, n, dtype):
    a = rng.integers(-4, 5, n).astype(dtype)  # small integers: ties for EQ/LE/GE
    b = rng.integers(-4, 5, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[:3], b[:3] = [np.nan, 1, np.nan], [1, np.nan, np.nan]
    return a, b


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype,n", [(np.float32, 64), (np.float32, 512), (np.float16, 128), (np.float16, 1024)])
def test_compare_count_form(rng, dtype, n, mode):
    a, b = random_with_ties(rng, n, dtype)
    out = launch(dtype, n, per_mode("Compare(d, x, y, CMPMODE::{mode}, N)"), a, b, list(MODES).index(mode))
    with np.errstate(invalid="ignore"):
        expected = np.packbits(MODES[mode](a, b), bitorder="little")
    np.testing.assert_array_equal(out[:n // 8], expected)
    np.testing.assert_array_equal(out[n // 8:], 0)  # nothing past the count's mask bytes


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_compares_count_form(rng, dtype, mode):
    n = 256
    a, b = random_with_ties(rng, n, dtype)
    out = launch(dtype, n, per_mode("Compares(d, x, y.GetValue(5), CMPMODE::{mode}, N)"), a, b,
                 list(MODES).index(mode))
    with np.errstate(invalid="ignore"):
        expected = np.packbits(MODES[mode](a, b[5]), bitorder="little")
    np.testing.assert_array_equal(out[:n // 8], expected)


def test_int32_compare_eq(rng):
    a = rng.integers(-3, 3, 64).astype(np.int32)
    b = rng.integers(-3, 3, 64).astype(np.int32)
    out = launch(np.int32, 64, "Compare(d, x, y, CMPMODE::EQ, N)", a, b)
    np.testing.assert_array_equal(out[:8], np.packbits(a == b, bitorder="little"))


LANES = (1, 37, 64)


@pytest.mark.parametrize("lanes", LANES)
def test_compare_into_cmpmask_register(rng, lanes):
    a, b = random_with_ties(rng, 64, np.float32)
    calls = tuple(f"Compare(x, y, CMPMODE::LT, uint64_t({k}), BinaryRepeatParams()); PipeBarrier<PIPE_V>(); "
                  "GetCmpMask(d)" for k in LANES)
    out = launch(np.float32, 64, calls, a, b, LANES.index(lanes))
    with np.errstate(invalid="ignore"):
        bits = np.less(a, b) & (np.arange(64) < lanes)
    np.testing.assert_array_equal(out[:8], np.packbits(bits, bitorder="little"))
    np.testing.assert_array_equal(out[8:16], 0)  # the register's upper 64 bits: no float lanes there


SELMODES = ("VSEL_CMPMASK_SPR", "VSEL_TENSOR_TENSOR_MODE", "VSEL_TENSOR_SCALAR_MODE")


@pytest.mark.parametrize("mode", SELMODES)
@pytest.mark.parametrize("dtype,n", [(np.float32, 256), (np.float32, 104), (np.float16, 384)])
def test_select_count_form(rng, dtype, n, mode):
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    mask = rng.integers(0, 256, 256).astype(np.uint8)
    calls = tuple(f"Select(d, m, x, {'y.GetValue(3)' if m == 'VSEL_TENSOR_SCALAR_MODE' else 'y'}, SELMODE::{m}, N)"
                  for m in SELMODES)
    out = run_elementwise(calls, a, b, np.zeros(n, dtype=dtype), mask, SELMODES.index(mode))
    bits = np.unpackbits(mask, bitorder="little")
    lanes = 256 // np.dtype(dtype).itemsize
    pick = bits[np.arange(n) % lanes] if mode == "VSEL_CMPMASK_SPR" else bits[:n]
    other = np.full(n, b[3]) if mode == "VSEL_TENSOR_SCALAR_MODE" else b
    np.testing.assert_array_equal(out, np.where(pick == 1, a, other))


@pytest.mark.parametrize("call,rule", [
    ("Compare(d, x, y, CMPMODE::LT, 32)", "count x sizeof\\(T\\) must be a multiple of 256 bytes"),
    ("Compare(d, x[4], y, CMPMODE::LT, 64)", "src0 operand must start 32-byte aligned"),
    ("GetCmpMask(d)", "CmpMask register holds nothing defined"),
])
def test_compare_rules(rng, call, rule):
    a, b = random_with_ties(rng, 128, np.float32)
    with pytest.raises(TwinRuleError, match=rule):
        launch(np.float32, 128, call, a, b)


def test_int32_compare_other_than_eq_is_rejected(rng):
    a = rng.integers(-3, 3, 64).astype(np.int32)
    with pytest.raises(TwinRuleError, match="A2 compares int32_t only with CMPMODE::EQ"):
        launch(np.int32, 64, "Compare(d, x, y, CMPMODE::LT, N)", a, a.copy())


def test_compare_dst_too_small_is_rejected(rng):
    a, b = random_with_ties(rng, 512, np.float32)
    with pytest.raises(TwinRuleError, match="dst operand must hold what the call touches"):
        launch(np.float32, 512, "Compare(d[480], x, y, CMPMODE::LT, N)", a, b)  # 32 of 64 bytes
