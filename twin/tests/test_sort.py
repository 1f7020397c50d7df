# SPDX-License-Identifier: BSD-3-Clause
"""Sort32 and MrgSort of the twin (twin/include/twin/sort.h) against NumPy: (score, index) pairs in
descending order of score, equal scores in their original order; then one test per enforced rule."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from float_bits import with_ties
from small_kernels import CTYPES, params, run

# Sorts `R` groups of 32 scores (T) with their uint32 indices into w, then, when the merge parameters
# in p say so (p[0] = validBit, 0: no merge; p[1] = repeatTimes; p[2] = ifExhaustedSuspension;
# p[3..6] = the queue lengths; p[7..10] = the queues' starts in pairs from w), merges into d; copies
# w (or d) out as 2 x R x 32 floats.
SORT = r"""
extern "C" __global__ __vector__ void sort_merge(GM_ADDR scores, GM_ADDR indices, GM_ADDR p, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bi, bw, bd;
    pipe.InitBuffer(bs, R * 32 * sizeof(T));
    pipe.InitBuffer(bi, R * 32 * 4);
    pipe.InitBuffer(bw, R * 32 * 8);
    pipe.InitBuffer(bd, R * 32 * 8);
    LocalTensor<T> s = bs.Get<T>(), w = bw.Get<T>(), d = bd.Get<T>();
    LocalTensor<uint32_t> ix = bi.Get<uint32_t>();
    GlobalTensor<T> gs, go;
    GlobalTensor<uint32_t> gi;
    GlobalTensor<int32_t> gp;
    gs.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(scores), R * 32);
    gi.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(indices), R * 32);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(out), R * 32 * 8 / sizeof(T));
    gp.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(p), 11);
    DataCopy(s, gs, R * 32);
    DataCopy(ix, gi, R * 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Sort32<T>(w, s, ix, R);
    const uint16_t valid = uint16_t(gp.GetValue(0));
    if (valid != 0) {
        Duplicate(d, T(0), R * 32 * 8 / sizeof(T));
        PipeBarrier<PIPE_V>();
        MrgSort4Info info;
        info.validBit = valid;
        info.repeatTimes = uint8_t(gp.GetValue(1));
        info.ifExhaustedSuspension = gp.GetValue(2) != 0;
        constexpr uint32_t kPerPair = 8 / sizeof(T);
        for (int q = 0; q < 4; ++q) info.elementLengths[q] = uint16_t(gp.GetValue(3 + q));
        MrgSortSrcList<T> list(w[gp.GetValue(7) * kPerPair], w[gp.GetValue(8) * kPerPair],
                               w[gp.GetValue(9) * kPerPair], w[gp.GetValue(10) * kPerPair]);
        MrgSort<T>(d, list, info);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, valid != 0 ? d : w, R * 32 * 8 / sizeof(T));
}
"""

# The declarations sort_merge puts ahead of SORT, with sample values, for tests/conformance.
KERNEL_TEXT_HEADS = {"SORT": "using T = float;\nconstexpr uint32_t R = 8;\n"}


def sort_merge(scores, indices, merge=(0,)):
    """(scores, indices) of every pair the kernel wrote, and the raw output bytes."""
    dtype = scores.dtype
    head = f"using T = {CTYPES[dtype]};\nconstexpr uint32_t R = {len(scores) // 32};\n"
    out = np.zeros(len(scores) * 8 // dtype.itemsize, dtype)
    p = params(*(list(merge) + [0] * 11)[:11])
    run(head + SORT, "sort_merge", [scores, indices, p, out])
    pairs = out.view(np.uint8).reshape(-1, 8)
    return pairs[:, :dtype.itemsize].copy().view(dtype).ravel(), pairs[:, 4:].copy().view(np.uint32).ravel(), pairs


def descending(scores, indices):
    """NumPy's answer: descending scores, ties in their original order."""
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    return scores[order], indices[order]


@pytest.mark.parametrize("groups", [1, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sort32_sorts_each_group_of_32(rng, dtype, groups):
    scores = with_ties(rng, 32 * groups, dtype, 6)
    indices = rng.permutation(32 * groups).astype(np.uint32)
    got_s, got_i, pairs = sort_merge(scores, indices)
    for g in range(groups):
        part = slice(32 * g, 32 * (g + 1))
        want_s, want_i = descending(scores[part], indices[part])
        np.testing.assert_array_equal(got_s[part], want_s)
        np.testing.assert_array_equal(got_i[part], want_i)
    if dtype == np.float16:  # the 2 bytes between a half score and its index are reserved, written 0
        np.testing.assert_array_equal(pairs[:, 2:4], 0)


@pytest.mark.parametrize("valid,queues", [(15, 4), (7, 3), (3, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_mrgsort_merges_the_valid_queues(rng, dtype, valid, queues):
    scores = with_ties(rng, 256, dtype, 6)
    indices = np.arange(256, dtype=np.uint32)
    got_s, got_i, _ = sort_merge(scores, indices, (valid, 1, 0, 32, 32, 32, 32, 0, 32, 64, 96))
    n = 32 * queues
    want_s, want_i = descending(scores[:n], indices[:n])  # ties: the earlier queue first
    np.testing.assert_array_equal(got_s[:n], want_s)
    np.testing.assert_array_equal(got_i[:n], want_i)


def test_mrgsort_repeats_over_contiguous_queues(rng):
    scores = rng.standard_normal(256).astype(np.float32)
    indices = np.arange(256, dtype=np.uint32)
    got_s, got_i, _ = sort_merge(scores, indices, (15, 2, 0, 32, 32, 32, 32, 0, 32, 64, 96))
    for half in (slice(0, 128), slice(128, 256)):
        want_s, want_i = descending(scores[half], indices[half])
        np.testing.assert_array_equal(got_s[half], want_s)
        np.testing.assert_array_equal(got_i[half], want_i)


def test_mrgsort_with_exhausted_suspension_stops_at_the_first_empty_queue(rng):
    scores = rng.standard_normal(256).astype(np.float32)
    indices = np.arange(256, dtype=np.uint32)
    got_s, got_i, _ = sort_merge(scores, indices, (3, 1, 1, 32, 32, 0, 0, 0, 32, 0, 0))
    want_s, want_i = descending(scores[:64], indices[:64])
    a, b = set(range(32)), set(range(32, 64))
    taken = 0  # the merge stops as soon as either queue has given all of its pairs
    while taken < 64 and a and b:
        (a if want_i[taken] in a else b).discard(int(want_i[taken]))
        taken += 1
    np.testing.assert_array_equal(got_s[:taken], want_s[:taken])
    np.testing.assert_array_equal(got_i[:taken], want_i[:taken])
    assert taken < 64
    np.testing.assert_array_equal(got_s[taken:], 0)  # d past the merged pairs keeps its zeros


@pytest.mark.parametrize("merge,rule", [
    ((5, 1, 0, 32, 32, 32, 32, 0, 32, 64, 96), r"validBit must be 3, 7 or 15 \(got 5\)"),
    ((15, 2, 0, 32, 32, 32, 32, 0, 64, 32, 96), r"repeatTimes above 1 needs 4 valid queues"),
    ((15, 2, 0, 32, 32, 32, 16, 0, 32, 64, 96), r"repeatTimes above 1 needs 4 valid queues"),
    ((3, 1, 0, 4096, 32, 0, 0, 0, 32, 0, 0), r"elementLengths\[0\] must be in \[0, 4095\] \(got 4096\)"),
    ((3, 1, 0, 32, 64, 0, 0, 0, 224, 0, 0), r"the source queue operand must hold what the call touches"),
])
def test_mrgsort_rules(rng, merge, rule):
    scores = rng.standard_normal(256).astype(np.float16)
    with pytest.raises(TwinRuleError, match=rule):
        sort_merge(scores, np.arange(256, dtype=np.uint32), merge)


def test_a_nan_score_is_refused(rng):
    scores = rng.standard_normal(256).astype(np.float32)
    scores[7] = np.nan
    with pytest.raises(TwinRuleError, match="score 7 of src0 is NaN, which has no documented place in the order"):
        sort_merge(scores, np.arange(256, dtype=np.uint32))
