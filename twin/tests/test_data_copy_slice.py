# SPDX-License-Identifier: BSD-3-Clause
"""DataCopy with SliceInfo (twin/include/twin/data_copy_slice.h) against NumPy, then its rules."""
import itertools

import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, random_array, run

# GM slice `g` of x -> UB slice `u` -> GM slice `o` of out, float, two dimensions; each description is
# five int32 (startIndex, endIndex, stride, burstLen, shapeValue) per dimension in the info buffer.
SLICE = r"""
SliceInfo Slice(const GlobalTensor<int32_t> &info, int32_t which, int32_t dim)
{
    const int32_t at = (which * 2 + dim) * 5;
    return SliceInfo(info.GetValue(at), info.GetValue(at + 1), info.GetValue(at + 2), info.GetValue(at + 3),
                     info.GetValue(at + 4));
}

extern "C" __global__ __vector__ void slice(GM_ADDR x, GM_ADDR out, GM_ADDR p)
{
    GlobalTensor<int32_t> info;
    info.SetGlobalBuffer((__gm__ int32_t *)p, 30);
    SliceInfo g[2] = {Slice(info, 0, 0), Slice(info, 0, 1)};
    SliceInfo u[2] = {Slice(info, 1, 0), Slice(info, 1, 1)};
    SliceInfo o[2] = {Slice(info, 2, 0), Slice(info, 2, 1)};
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float *)x, g[0].shapeValue * g[1].shapeValue);
    og.SetGlobalBuffer((__gm__ float *)out, o[0].shapeValue * o[1].shapeValue);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, u[0].shapeValue * u[1].shapeValue * sizeof(float));
    LocalTensor<float> ub = buf.Get<float>();
    DataCopy(ub, xg, u, g, 2);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(og, ub, o, u, 2);
}
"""


def positions(desc):
    """Flat element indices a two-dimensional description selects, in the order they are copied."""
    (s0, e0, st0, burst, w), (s1, e1, st1, _, _) = desc
    run_elems = burst * 8
    runs = (e0 - s0 + 1 + st0) // (run_elems + st0)
    inner = [s0 + r * (run_elems + st0) + k for r in range(runs) for k in range(run_elems)]
    return np.array([row * w + i for row, i in itertools.product(range(s1, e1 + 1, 1 + st1), inner)])


def launch(rng, g, u, o):
    x = random_array(rng, g[0][4] * g[1][4], np.float32)
    out = random_array(rng, o[0][4] * o[1][4], np.float32)
    before = out.copy()
    run(SLICE, "slice", [x, out, params(*(v for desc in (g, u, o) for dim in desc for v in dim))])
    return x, before, out


@pytest.mark.parametrize("g,u,o", [
    # GM gap of 7 floats (not whole blocks: the DataCopyPad route), every other row; UB packed; out packed.
    ([(16, 70, 7, 3, 87), (0, 2, 1, 1, 3)], [(0, 47, 0, 3, 48), (0, 1, 0, 1, 2)],
     [(0, 47, 0, 3, 48), (0, 1, 0, 1, 2)]),
    # Whole-block gaps on every side, rows 1..4 of 6, UB and out rows padded.
    ([(8, 63, 8, 1, 64), (1, 4, 0, 1, 6)], [(0, 79, 16, 1, 80), (0, 3, 0, 1, 4)],
     [(4, 107, 24, 1, 112), (2, 8, 1, 1, 9)]),
])
def test_slice_round_trip_matches_numpy(rng, g, u, o):
    x, before, out = launch(rng, g, u, o)
    expected = before.copy()
    expected[positions(o)] = x[positions(g)]
    np.testing.assert_array_equal(out, expected)


GOOD_G = [(16, 70, 7, 3, 87), (0, 2, 1, 1, 3)]
GOOD_U = [(0, 47, 0, 3, 48), (0, 1, 0, 1, 2)]


@pytest.mark.parametrize("g,u,rule", [
    ([(16, 70, 7, 3, 87), (2, 2, 1, 1, 3)], GOOD_U, r"srcSliceInfo\[1\].startIndex must be less than its endIndex"),
    ([(16, 70, 7, 3, 87), (0, 3, 1, 1, 3)], GOOD_U, r"srcSliceInfo\[1\].endIndex must be less than the dimension"),
    ([(16, 72, 7, 3, 87), (0, 2, 1, 1, 3)], GOOD_U, "srcSliceInfo\\[0\\] must cover whole runs"),
    (GOOD_G, [(0, 47, 4, 3, 52), (0, 1, 0, 1, 2)], "dimension-0 stride must be whole 32-byte blocks"),
    (GOOD_G, [(0, 47, 0, 2, 48), (0, 1, 0, 1, 2)], r"dstSliceInfo\[0\].burstLen must equal srcSliceInfo\[0\]"),
    (GOOD_G, [(0, 47, 0, 3, 48), (0, 2, 0, 1, 3)], "both descriptions must give the same number of copies"),
    ([(16, 70, 7, 3, 0), (0, 2, 1, 1, 0)], GOOD_U, "shapeValue is 0"),
])
def test_slice_rules(rng, g, u, rule):
    with pytest.raises(TwinRuleError, match=rule):
        launch(rng, g, u, GOOD_U)
