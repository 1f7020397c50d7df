# SPDX-License-Identifier: BSD-3-Clause
"""Copy (UB -> UB, twin/include/twin/ub_copy.h) and CreateVecIndex (twin/include/twin/vector_fill.h)
against NumPy: masked repeats with block and repeat strides, the index ramp."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import random_array, run_elementwise


@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.uint16])
def test_copy_rows_with_repeat_strides(rng, dtype):
    """The first `width` lanes of each row of a [rows, 256 bytes] source, packed one block per row."""
    per_block = 32 // np.dtype(dtype).itemsize
    lanes = 8 * per_block
    rows = int(rng.integers(1, 9))
    a = random_array(rng, rows * lanes, dtype)
    before = random_array(rng, rows * lanes, dtype)
    out = run_elementwise(f"Copy(d, x, uint64_t({per_block}), {rows}, {{1, 1, 1, 8}})", a, a.copy(), before.copy())
    expected = before.copy()
    expected[:rows * per_block] = a.reshape(rows, lanes)[:, :per_block].reshape(-1)
    np.testing.assert_array_equal(out, expected)


def test_copy_rejects_wide_repeat_stride(rng):
    a = random_array(rng, 64, np.int32)
    with pytest.raises(TwinRuleError, match="dstRepeatSize must fit in 12 bits"):
        run_elementwise("Copy(d, x, uint64_t(8), 1, {1, 1, 4096, 8})", a, a.copy(), np.zeros(64, np.int32))


@pytest.mark.parametrize("dtype", [np.int16, np.float16, np.int32, np.float32])
def test_create_vec_index(rng, dtype):
    n = 512
    first = int(rng.integers(-100, 100))
    before = random_array(rng, n, dtype)
    out = run_elementwise(f"CreateVecIndex(d, D({first}), N - 5)", np.zeros(n, dtype), np.zeros(n, dtype),
                          before.copy())
    np.testing.assert_array_equal(out[:n - 5], (first + np.arange(n - 5)).astype(dtype))
    np.testing.assert_array_equal(out[n - 5:], before[n - 5:])
