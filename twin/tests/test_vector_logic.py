# SPDX-License-Identifier: BSD-3-Clause
"""Bitwise vector instructions of the twin (twin/include/twin/vector_logic.h) against NumPy: And,
Or, ShiftLeft and ShiftRight in their count forms, then the rules (dtypes, the shift range)."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import random_array, run_elementwise

# The calls a test picks from compile into one kernel per dtype and count (run_elementwise's pick).
LOGIC = {"And": np.bitwise_and, "Or": np.bitwise_or}
SHIFTS = ("ShiftLeft", "ShiftRight")


@pytest.mark.parametrize("n", [16, 240, 1024])
@pytest.mark.parametrize("dtype", [np.int16, np.uint16])
@pytest.mark.parametrize("name", LOGIC)
def test_and_or_count_form(rng, name, dtype, n):
    a, b = random_array(rng, n, dtype), random_array(rng, n, dtype)
    before = random_array(rng, n, dtype)
    out = run_elementwise(tuple(f"{op}(d, x, y, N - 3)" for op in LOGIC), a, b, before.copy(),
                          pick=list(LOGIC).index(name))
    np.testing.assert_array_equal(out[:n - 3], LOGIC[name](a, b)[:n - 3])
    np.testing.assert_array_equal(out[n - 3:], before[n - 3:])  # lanes past the count keep their values


@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.uint32])
@pytest.mark.parametrize("direction", SHIFTS)
def test_shift_by_scalar(rng, dtype, direction):
    n = 256
    a = random_array(rng, n, dtype)
    bits = 8 * np.dtype(dtype).itemsize
    shift = int(rng.integers(0, bits + 1))
    b = np.full(n, shift, dtype=dtype)
    out = run_elementwise(tuple(f"{s}(d, x, y.GetValue(0), N)" for s in SHIFTS), a, b, np.zeros(n, dtype),
                          pick=SHIFTS.index(direction))
    wide = a.astype(np.int64)
    expected = (wide << shift) if direction == "ShiftLeft" else (wide >> shift)
    np.testing.assert_array_equal(out, expected.astype(dtype))  # wraps to the element width


def test_and_rejects_float(rng):
    a = random_array(rng, 64, np.float32)
    with pytest.raises(TwinRuleError, match="A2 supports int16_t and uint16_t for this instruction"):
        run_elementwise("And(d, x, y, N)", a, a.copy(), np.zeros(64, np.float32))


def test_shift_out_of_range_is_rejected(rng):
    a = random_array(rng, 128, np.int16)
    with pytest.raises(TwinRuleError, match=r"the shift\) must be in \[0, 16\] for int16_t \(got 17\)"):
        run_elementwise("ShiftLeft(d, x, int16_t(17), N)", a, a.copy(), np.zeros(128, np.int16))
