# SPDX-License-Identifier: BSD-3-Clause
"""Sum reductions of the twin (twin/include/twin/reduce.h) bit for bit against a NumPy model of the
documented order: a binary tree of neighbours within each repeat (or 32-byte block), masked-off
lanes taking no part; the count form of ReduceSum then adds the repeat sums in order, the repeat
form adds them by the same tree. Then the definedness of results and the rules."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from float_bits import assert_same
from small_kernels import random_array
from vector_driver import (BUF_BYTES, REPEAT, broken_then_fixed, gather, launch, mask_from_bits,
                           op_code, tree)

FLOATS = [np.float16, np.float32]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4099])
@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_sum_count_form_in_order(rng, dtype, n):
    lanes = REPEAT // np.dtype(dtype).itemsize
    a, d = random_array(rng, n, dtype, scale=8), random_array(rng, 16, dtype, scale=8)
    out = launch(op_code("kReduceSumCount"), dtype, a, np.zeros(16, dtype), d, count=n)
    sums, _ = tree(*gather(a, lanes, -(-n // lanes), count=n))
    acc = sums[0]
    for s in sums[1:]:
        acc = acc + s
    assert_same(out[:1], np.array([acc], dtype))
    assert_same(out[1:16], d[1:16])
    # the order matters: the result is not NumPy's own pairwise sum in general, but close to it
    np.testing.assert_allclose(float(out[0]), a.astype(np.float64).sum(), rtol=0.05 if dtype == np.float16 else 1e-4,
                               atol=n * (0.05 if dtype == np.float16 else 1e-5))


@pytest.mark.parametrize("bits", [False, True])
@pytest.mark.parametrize("repeat", [1, 3, 200])
@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_sum_repeat_form_by_tree(rng, dtype, repeat, bits):
    lanes = REPEAT // np.dtype(dtype).itemsize
    src_rep = int(rng.integers(8, 10))
    a = random_array(rng, repeat * src_rep * 32 // np.dtype(dtype).itemsize + lanes, dtype, scale=8)
    kw = dict(mask_bits=mask_from_bits(rng, lanes)) if bits else dict(mask_len=int(rng.integers(1, lanes + 1)))
    op = op_code("kReduceSumMaskBits" if bits else "kReduceSumMaskLen")
    out = launch(op, dtype, a, np.zeros(4096, dtype), np.zeros(16, dtype), repeat=repeat,
                 strides=(1, 1, 1, 8, src_rep, 8), **kw)
    sums, _ = tree(*gather(a, lanes, repeat, rep=src_rep, **kw))
    while len(sums) > 1:
        chunks = -(-len(sums) // lanes)
        grid = np.zeros(chunks * lanes, dtype)
        grid[:len(sums)] = sums
        present = np.arange(chunks * lanes) < len(sums)
        sums, _ = tree(grid.reshape(chunks, lanes), present.reshape(chunks, lanes))
    assert_same(out[:1], sums[:1].astype(dtype))


@pytest.mark.parametrize("form", ["kWholeMaskLen", "kWholeMaskBits", "kWholeCounter"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_whole_reduce_sum(rng, dtype, form):
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    repeat, blk, rep, dst_rep = int(rng.integers(1, 12)), int(rng.integers(1, 3)), int(rng.integers(16, 20)), 3
    kw = {"kWholeMaskLen": dict(mask_len=int(rng.integers(1, lanes + 1))),
          "kWholeMaskBits": dict(mask_bits=mask_from_bits(rng, lanes)),
          "kWholeCounter": dict(count=int(rng.integers(1, lanes * repeat + 1)))}[form]
    a = random_array(rng, repeat * rep * 32 // size + lanes * blk, dtype, scale=8)
    d = random_array(rng, repeat * dst_rep + 16, dtype, scale=8)
    out = launch(op_code(form), dtype, a, None, d, repeat=repeat, strides=(1, blk, 1, dst_rep, rep, 8), **kw)
    if form == "kWholeCounter":
        repeat = -(-kw["count"] // lanes)
    sums, any_lane = tree(*gather(a, lanes, repeat, blk=blk, rep=rep, **kw))
    want = d.copy()
    at = np.arange(repeat) * dst_rep
    want[at[any_lane]] = sums[any_lane]
    assert_same(out[:len(d)], want)


@pytest.mark.parametrize("bits", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_block_reduce_sum(rng, dtype, bits):
    lanes, size = REPEAT // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    per_block = 32 // size
    repeat, blk, rep, dst_rep = 6, 2, 17, 2
    kw = dict(mask_bits=mask_from_bits(rng, lanes)) if bits else dict(mask_len=int(rng.integers(1, lanes + 1)))
    a = random_array(rng, repeat * rep * 32 // size + lanes * blk, dtype, scale=8)
    d = random_array(rng, repeat * dst_rep * 8 + 16, dtype, scale=8)
    out = launch(op_code("kBlockMaskBits" if bits else "kBlockMaskLen"), dtype, a, None, d, repeat=repeat,
                 strides=(1, blk, 1, dst_rep, rep, 8), **kw)
    values, present = gather(a, lanes, repeat, blk=blk, rep=rep, **kw)
    sums, any_lane = tree(values.reshape(repeat, 8, per_block), present.reshape(repeat, 8, per_block))
    want = d.copy()
    at = (np.arange(repeat)[:, None] * dst_rep * 8 + np.arange(8)[None, :])
    want[at[any_lane]] = sums[any_lane]
    assert_same(out[:len(d)], want)


def test_undefined_lane_in_a_sum_makes_it_undefined(rng):
    """A poisoned lane summed into a result poisons it, and copying it to GM is an error; with the
    mask leaving that lane out the same reduction is defined."""
    a, d = random_array(rng, 64, np.float32, scale=8), random_array(rng, 8, np.float32, scale=8)
    with pytest.raises(TwinRuleError, match="holds undefined data after the launch"):
        launch(op_code("kReduceSumCount"), np.float32, a, np.zeros(8, np.float32), d, count=64, defined_a=56)
    with pytest.raises(TwinRuleError, match="holds undefined data after the launch"):
        launch(op_code("kWholeMaskLen"), np.float32, a, None, d, mask_len=64, repeat=1, defined_a=56,
               strides=(1, 1, 1, 1, 8, 8))
    out = launch(op_code("kWholeMaskLen"), np.float32, a, None, d, mask_len=56, repeat=1, defined_a=56,
                 strides=(1, 1, 1, 1, 8, 8))
    sums, _ = tree(*gather(a, 64, 1, mask_len=56))
    assert_same(out[:1], sums.astype(np.float32))


F32 = np.float32
RULES = {
    "integer_reduction": ("ReduceSum", r"A2 supports half and float for this reduction \(got int32_t\)",
                          dict(op=("kReduceSumCount",), dtype=np.int32, count=64), dict(op=("kReduceSumCount",), dtype=F32, count=64)),
    "block_dst_alignment": ("BlockReduceSum", r"dst must be 32-byte aligned for float \(byte offset \d+\)",
                            dict(op=("kBlockMaskLen",), dtype=F32, mask_len=64, repeat=1, off=(0, 0, 4)),
                            dict(op=("kBlockMaskLen",), dtype=F32, mask_len=64, repeat=1, off=(0, 0, 8))),
    "repeat_256": ("WholeReduceSum", r"repeatTime must be in \[0, 255\] \(got 256\)",
                   dict(op=("kWholeMaskLen",), dtype=F32, mask_len=64, repeat=256, strides=(1, 1, 1, 1, 0, 8)),
                   dict(op=("kWholeMaskLen",), dtype=F32, mask_len=64, repeat=255, strides=(1, 1, 1, 1, 0, 8))),
    "in_place_dependency": ("WholeReduceSum", "repeat 1 reads src that repeat 0 already overwrote",
                            dict(op=("kWholeMaskLen",), dtype=F32, mask_len=64, repeat=4, alias=1, off=(0, 0, 64),
                                 strides=(1, 1, 1, 1, 8, 8)),
                            dict(op=("kWholeMaskLen",), dtype=F32, mask_len=64, repeat=4, alias=1, off=(0, 0, 0),
                                 strides=(1, 1, 1, 1, 8, 8))),
    "work_too_small": ("ReduceSum", "workLocal must hold the 9 repeat sums rounded up to a whole block",
                       dict(op=("kReduceSumMaskLen",), dtype=F32, mask_len=64, repeat=9, off=(0, BUF_BYTES // 4 - 8, 0)),
                       dict(op=("kReduceSumMaskLen",), dtype=F32, mask_len=64, repeat=8, off=(0, BUF_BYTES // 4 - 8, 0))),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_rule(rng, rule):
    broken_then_fixed(rng, *RULES[rule])
