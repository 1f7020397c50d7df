# SPDX-License-Identifier: BSD-3-Clause
"""Max / min reductions, pair sums and the ReduceType names of the twin (twin/include/twin/reduce_minmax.h,
reduce_typed.h) bit for bit against NumPy models of the documented semantics: the extreme of the active
lanes of each group with the lowest index among equals, the index stored in the value type's bits, groups
without active lanes leaving dst as it was; then GetReduceRepeatSumSpr and the rules."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from float_bits import assert_same, with_ties
from small_kernels import random_array
from vector_driver import (REPEAT, broken_then_fixed, gather, launch, mask_from_bits, op_code,
                           tree)

FLOATS = [np.float16, np.float32]
VALUE_INDEX, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX = range(4)


def extremes(values, present, is_max):
    """(extreme, index of its first occurrence, any lane present) along the last axis."""
    fill = -np.inf if is_max else np.inf
    masked = np.where(present, values.astype(np.float64), fill)
    index = masked.argmax(axis=-1) if is_max else masked.argmin(axis=-1)
    return np.take_along_axis(values, index[..., None], -1)[..., 0], index, present.any(axis=-1)


def index_bits(index, dtype):
    """Indices in the bits of `dtype`, as the hardware stores them."""
    raw = np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32
    return np.asarray(index).astype(raw).view(dtype)


def mask_kw(rng, lanes, bits):
    return dict(mask_bits=mask_from_bits(rng, lanes)) if bits else dict(mask_len=int(rng.integers(1, lanes + 1)))


@pytest.mark.parametrize("order", [VALUE_INDEX, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX])
@pytest.mark.parametrize("form", ["kWholeMaxMaskLen", "kWholeMinMaskBits", "kRepeatMax", "kRepeatMin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_whole_reduce_extreme_in_each_order(rng, dtype, form, order):
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    is_max, bits = "Max" in form, form.endswith("Bits") or form == "kRepeatMin"
    repeat, blk, rep, dst_rep = int(rng.integers(1, 9)), int(rng.integers(1, 3)), int(rng.integers(16, 20)), 2
    kw = mask_kw(rng, lanes, bits)
    a = with_ties(rng, repeat * rep * 32 // size + lanes * blk, dtype, 20)
    d = random_array(rng, repeat * dst_rep * 4 + 32, dtype, scale=8)
    out = launch(op_code(form), dtype, a, None, d, repeat=repeat, strides=(1, blk, 1, dst_rep, rep, 8), order=order,
                 **kw)
    value, index, any_lane = extremes(*gather(a, lanes, repeat, blk=blk, rep=rep, **kw), is_max)
    want = d.copy().view(np.uint8)
    unit = {VALUE_INDEX: 2 * size, INDEX_VALUE: 2 * size, ONLY_VALUE: size, ONLY_INDEX: 4}[order]
    for r in np.flatnonzero(any_lane):
        parts = {VALUE_INDEX: [value[r:r + 1], index_bits(index[r:r + 1], dtype)],
                 INDEX_VALUE: [index_bits(index[r:r + 1], dtype), value[r:r + 1]],
                 ONLY_VALUE: [value[r:r + 1]], ONLY_INDEX: [index[r:r + 1].astype(np.uint32)]}[order]
        raw = np.concatenate([p.view(np.uint8) for p in parts])
        want[r * dst_rep * unit: r * dst_rep * unit + len(raw)] = raw
    assert_same(out[:len(d)], want.view(dtype))


@pytest.mark.parametrize("form", ["kBlockMaxMaskLen", "kBlockMinMaskBits", "kDataBlockMax", "kDataBlockMin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_block_reduce_extreme(rng, dtype, form):
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    per_block, is_max = 32 // size, "Max" in form
    repeat, blk, rep, dst_rep = 5, 2, 17, 2
    kw = mask_kw(rng, lanes, form.endswith("Bits") or form == "kDataBlockMin")
    a = random_array(rng, repeat * rep * 32 // size + lanes * blk, dtype, scale=8)
    d = random_array(rng, repeat * dst_rep * 8 + 16, dtype, scale=8)
    out = launch(op_code(form), dtype, a, None, d, repeat=repeat, strides=(1, blk, 1, dst_rep, rep, 8), **kw)
    values, present = gather(a, lanes, repeat, blk=blk, rep=rep, **kw)
    value, _, any_lane = extremes(values.reshape(repeat, 8, per_block), present.reshape(repeat, 8, per_block), is_max)
    want = d.copy()
    at = np.arange(repeat)[:, None] * dst_rep * 8 + np.arange(8)[None, :]
    want[at[any_lane]] = value[any_lane]
    assert_same(out[:len(d)], want)


@pytest.mark.parametrize("form", ["kPairMaskLen", "kPairMaskBits", "kPairElemSum"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_pair_sums(rng, dtype, form):
    """Neighbours (2i, 2i+1) summed into dst[i]; a lone active lane passes up, a pair with none leaves dst."""
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    repeat, rep, dst_rep = 4, 9, 2
    kw = mask_kw(rng, lanes, form != "kPairMaskLen")
    a = random_array(rng, repeat * rep * 32 // size + lanes, dtype, scale=8)
    d = random_array(rng, repeat * dst_rep * lanes // 2 + 16, dtype, scale=8)
    out = launch(op_code(form), dtype, a, None, d, repeat=repeat, strides=(1, 1, 1, dst_rep, rep, 8), **kw)
    values, present = gather(a, lanes, repeat, rep=rep, **kw)
    sums, any_lane = tree(values.reshape(repeat, lanes // 2, 2), present.reshape(repeat, lanes // 2, 2))
    want = d.copy()
    at = np.arange(repeat)[:, None] * dst_rep * lanes // 2 + np.arange(lanes // 2)[None, :]
    want[at[any_lane]] = sums[any_lane]
    assert_same(out[:len(d)], want)


@pytest.mark.parametrize("form", ["kRepeatSum", "kDataBlockSum"])
def test_typed_sums_are_the_named_instruction(rng, form):
    """ReduceRepeat<SUM> is WholeReduceSum and ReduceDataBlock<SUM> is BlockReduceSum, bit for bit."""
    dtype = np.float16
    kw = dict(mask_len=int(rng.integers(1, 129)), repeat=3, strides=(1, 1, 1, 1, 8, 8))
    a, d = random_array(rng, 3 * 128, dtype, scale=8), random_array(rng, 64, dtype, scale=8)
    named = {"kRepeatSum": "kWholeMaskLen", "kDataBlockSum": "kBlockMaskLen"}[form]
    assert_same(launch(op_code(form), dtype, a, None, d, **kw), launch(op_code(named), dtype, a, None, d, **kw))


@pytest.mark.parametrize("cal_index", [False, True])
@pytest.mark.parametrize("form, n", [("kReduceMaxCount", 1), ("kReduceMinCount", 4099), ("kReduceMaxMaskLen", 7),
                                     ("kReduceMinMaskBits", 200)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_max_min_over_a_tensor(rng, dtype, form, n, cal_index):
    """The extreme of every active lane into dst[0], with calIndex its element index into dst[1]
    (repeat r, lane l: r * srcRepStride * elements per block + l); dst[2:] untouched."""
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    is_max, rep = "Max" in form, 8 if "Count" in form else 9
    kw = dict(count=n) if "Count" in form else mask_kw(rng, lanes, form.endswith("Bits"))
    repeat = -(-n // lanes) if "Count" in form else n
    a = with_ties(rng, repeat * rep * 32 // size + lanes, dtype, 20)
    d = random_array(rng, 16, dtype, scale=8)
    out = launch(op_code(form), dtype, a, np.zeros(4 * repeat + 64, dtype), d, count=n if "Count" in form else 0,
                 repeat=0 if "Count" in form else repeat, strides=(1, 1, 1, 8, rep, 8), order=int(cal_index),
                 **{k: v for k, v in kw.items() if k != "count"})
    values, present = gather(a, lanes, repeat, rep=rep, **kw)
    value, lane, any_lane = extremes(values, present, is_max)
    best = np.flatnonzero(any_lane)[np.argmax(value[any_lane]) if is_max else np.argmin(value[any_lane])]
    want = d.copy()
    want[0] = value[best]
    if cal_index:
        want[1:2] = index_bits([best * rep * 32 // size + lane[best]], dtype)
    assert_same(out[:16], want)


def test_reduce_max_charges_every_round(rng):
    """Modelled cost: 40 repeats of float, then 2 repeats over their 80 (value, index) pairs, then one over
    the 4 left, as three instructions."""
    a = random_array(rng, 40 * 64, np.float32, scale=8)
    _, stats = launch(op_code("kReduceMaxCount"), np.float32, a, np.zeros(256, np.float32), np.zeros(16, np.float32),
                      count=40 * 64, order=1, with_stats=True)
    assert (stats.total["vector_instrs"], stats.total["vector_repeats"]) == (3, 40 + 2 + 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_sum_register_holds_the_count_form_result(rng, dtype):
    n = int(rng.integers(100, 3000))
    a, d = random_array(rng, n, dtype, scale=8), random_array(rng, 16, dtype, scale=8)
    out = launch(op_code("kSumSpr"), dtype, a, np.zeros(16, dtype), d, count=n)
    reference = launch(op_code("kReduceSumCount"), dtype, a, np.zeros(16, dtype), d, count=n)
    assert_same(out[:2], np.array([reference[0], reference[0]], dtype))


F16, F32 = np.float16, np.float32


@pytest.mark.parametrize("call, rule, broken, fixed", [
    ("ReduceMax", r"sharedTmpBuffer must hold every round's \(value, index\) pairs, each round 32-byte aligned "
     r"\(needs 580 bytes, the buffer has 576\)",
     dict(op=("kReduceMaxCount",), dtype=F16, count=130 * 128, order=1, off=(0, 30720 - 288, 0)),
     dict(op=("kReduceMaxCount",), dtype=F16, count=130 * 128, order=1, off=(0, 30720 - 304, 0))),
    ("ReduceMin", r"sharedTmpBuffer must start 32-byte aligned in UB \(byte offset 61448\)",
     dict(op=("kReduceMinCount",), dtype=F32, count=64, off=(0, 2, 0)),
     dict(op=("kReduceMinCount",), dtype=F32, count=64, off=(0, 8, 0))),
    ("ReduceRepeat<MAX>", r"dst must be 4-byte aligned for half in this ReduceOrder \(byte offset 122882\)",
     dict(op=("kRepeatMax",), dtype=F16, mask_len=128, repeat=2, off=(0, 0, 1)),
     dict(op=("kRepeatMax",), dtype=F16, mask_len=128, repeat=2, off=(0, 0, 1), order=ONLY_VALUE)),
    ("WholeReduceMin", r"order must be a ReduceOrder, in \[0, 3\] on A2 \(got 4\)",
     dict(op=("kWholeMinMaskLen",), dtype=F32, mask_len=64, repeat=1, order=4),
     dict(op=("kWholeMinMaskLen",), dtype=F32, mask_len=64, repeat=1, order=3)),
    ("ReducePairElem<SUM>", r"dst must be 32-byte aligned for float \(byte offset 122896\)",
     dict(op=("kPairElemSum",), dtype=F32, mask_bits=(~0, 0), repeat=1, off=(0, 0, 4)),
     dict(op=("kPairElemSum",), dtype=F32, mask_bits=(~0, 0), repeat=1, off=(0, 0, 8))),
    ("ReduceDataBlock<MIN>", r"repeatTime must be in \[0, 255\] \(got 256\)",
     dict(op=("kDataBlockMin",), dtype=F16, mask_bits=(~0, ~0), repeat=256),
     dict(op=("kDataBlockMin",), dtype=F16, mask_bits=(~0, ~0), repeat=240)),
])
def test_rules(rng, call, rule, broken, fixed):
    broken_then_fixed(rng, call, rule, broken, fixed)


def test_reading_the_sum_register_before_any_reduce_sum_is_an_error(rng):
    with pytest.raises(TwinRuleError, match="core 0: GetReduceRepeatSumSpr: reads the result of the count form of "
                                            "ReduceSum, and none with a defined result ran on this core"):
        launch(op_code("kSprAlone"), np.float32, random_array(rng, 64, np.float32, scale=8), None, random_array(rng, 16, np.float32, scale=8))
