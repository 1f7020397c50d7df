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


def copy_counter_reference(src: np.ndarray, before: np.ndarray, count: int, repeats: int, strides) -> np.ndarray:
    """Copy in Counter mode on A2: each of `repeats` repeats copies `count` elements as consecutive
    32-byte blocks at the block strides, the repeats dstRepeatSize / srcRepeatSize blocks apart."""
    dst_stride, src_stride, dst_repeat, src_repeat = strides
    per_block = 32 // src.dtype.itemsize
    out = before.copy()
    e = np.arange(count)
    for r in range(repeats):
        d = (r * dst_repeat + (e // per_block) * dst_stride) * per_block + e % per_block
        s = (r * src_repeat + (e // per_block) * src_stride) * per_block + e % per_block
        out[d] = src[s]
    return out


def copy_counter_call(count: int, repeats: int, strides) -> str:
    return ("{ SetMaskCount(); SetVectorMask<T, MaskMode::COUNTER>(" + str(count) + "); "
            f"Copy<T, false>(d, x, MASK_PLACEHOLDER, {repeats}, {{{', '.join(map(str, strides))}}}); "
            "SetMaskNorm(); ResetMask(); }")


def test_copy_counter_mode_takes_count_per_repeat_past_eight_blocks(rng):
    """asc-devkit's copy_ub2ub scenario 3: the first 8 int32 of each of 18 rows of 64, in one repeat of
    144 elements with srcStride 8 (the 18 blocks of the repeat run on at the block stride)."""
    a = random_array(rng, 18 * 64, np.int32)
    before = random_array(rng, 18 * 64, np.int32)
    out = run_elementwise(copy_counter_call(144, 1, (1, 8, 8, 8)), a, a.copy(), before.copy())
    np.testing.assert_array_equal(out[:144], a.reshape(18, 64)[:, :8].reshape(-1))
    np.testing.assert_array_equal(out[144:], before[144:])


# (count, repeatTime, {dstStride, srcStride, dstRepeatSize, srcRepeatSize}): BroadCast's A2 row spread
# (one source block per row, srcStride 0, rows of 13 blocks), a partial last block, fewer lanes than
# a normal repeat, gaps in both operands, repeatTime 0 (a NOP). Counts are float32's (doubled for
# half). All compile into one kernel per dtype, with the two rule cases after them.
COUNTER_CASES = [(104, 5, (1, 0, 13, 1)), (100, 3, (1, 1, 13, 16)), (20, 7, (1, 1, 3, 4)), (72, 2, (2, 1, 20, 9)),
                 (64, 0, (1, 1, 8, 8))]
COUNTER_N = 2048
COUNTER_RULES = [
    # five repeats 100 blocks apart run past the 8 KiB tensor
    (copy_counter_call(64, 5, (1, 1, 100, 100)), "footprint .*Counter mode.* must stay inside its buffer"),
    # repeat r + 1 reads the 64 elements repeat r wrote
    ("{ SetMaskCount(); SetVectorMask<T, MaskMode::COUNTER>(64); Copy<T, false>(x[64], x, MASK_PLACEHOLDER, 3, "
     "{1, 1, 8, 8}); SetMaskNorm(); ResetMask(); }", "reads what the dst operand of repeat 0 wrote"),
]


def counter_calls(dtype) -> tuple:
    scale = 4 // np.dtype(dtype).itemsize
    return tuple(copy_counter_call(c * scale, r, s) for c, r, s in COUNTER_CASES) + tuple(c for c, _ in COUNTER_RULES)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("index", range(len(COUNTER_CASES)), ids=lambda i: f"count{COUNTER_CASES[i][0]}_rep{COUNTER_CASES[i][1]}")
def test_copy_counter_mode_repeats_count_elements(rng, dtype, index):
    count, repeats, strides = COUNTER_CASES[index]
    count *= 4 // np.dtype(dtype).itemsize
    a = random_array(rng, COUNTER_N, dtype)
    before = random_array(rng, COUNTER_N, dtype)
    out = run_elementwise(counter_calls(dtype), a, a.copy(), before.copy(), pick=index)
    np.testing.assert_array_equal(out, copy_counter_reference(a, before, count, repeats, strides))


@pytest.mark.parametrize("index", range(len(COUNTER_RULES)))
def test_copy_counter_mode_rules(rng, index):
    a = random_array(rng, COUNTER_N, np.float32)
    with pytest.raises(TwinRuleError, match=COUNTER_RULES[index][1]):
        run_elementwise(counter_calls(np.float32), a, a.copy(), np.zeros(COUNTER_N, np.float32),
                        pick=len(COUNTER_CASES) + index)
