# SPDX-License-Identifier: BSD-3-Clause
"""The pipe rules judge the 32-byte blocks an access touches, not its whole buffer: ops-nn's
add_rms_norm keeps everything in one TBuf and copies gamma into one part of it on MTE2 while V and
MTE3 work on other parts. VARIANT 0: V reads the first part and MTE3 copies out the third while
MTE2 fills the second, with no flag between them: no bytes are shared, so no ordering is needed.
1: V reads the part MTE2 wrote without the MTE2 -> V flag: the rule error. 2: the same with one
GetValue from it (S needs MTE2 -> S)."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import random_array, run

HALF = 64  # float32 elements

SOURCE = """
extern "C" __global__ __aicore__ void halves(GM_ADDR x, GM_ADDR g, GM_ADDR y)
{
    GlobalTensor<float> xg, gg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, HALF);
    gg.SetGlobalBuffer((__gm__ float *)g, HALF);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * HALF);
    TPipe pipe;
    TBuf<TPosition::VECCALC> unit;
    pipe.InitBuffer(unit, 4 * HALF * sizeof(float));
    LocalTensor<float> all = unit.Get<float>();
    LocalTensor<float> first = all[0], second = all[HALF], out = all[2 * HALF], sum = all[3 * HALF];
    DataCopy(first, xg, HALF);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DataCopy(second, gg, HALF);  // MTE2 fills the second part, no flag yet
#if VARIANT == 0
    Muls(out, first, 2.0f, HALF);
#elif VARIANT == 1
    Muls(out, second, 2.0f, HALF);
#else
    out.SetValue(0, second.GetValue(0));
#endif
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, out, HALF);  // MTE3 reads the third part while MTE2 may still fill the second
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
    Add(sum, first, second, HALF);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
    DataCopy(yg[HALF], sum, HALF);
}
""".replace("HALF", str(HALF))


def test_disjoint_blocks_of_one_buffer_need_no_ordering(rng):
    x, g = random_array(rng, HALF, np.float32), random_array(rng, HALF, np.float32)
    y = np.zeros(2 * HALF, np.float32)
    run(SOURCE, "halves", [x, g, y], defines={"VARIANT": 0})
    np.testing.assert_array_equal(y[:HALF], x * np.float32(2))
    np.testing.assert_array_equal(y[HALF:], x + g)


@pytest.mark.parametrize("variant, event", [(1, "MTE2_V"), (2, "MTE2_S")])
def test_the_blocks_another_pipe_wrote_still_need_it(rng, variant, event):
    x, g = random_array(rng, HALF, np.float32), random_array(rng, HALF, np.float32)
    with pytest.raises(TwinRuleError, match=rf"data written by one pipe and then read by another needs .*HardEvent::{event}"):
        run(SOURCE, "halves", [x, g, np.zeros(2 * HALF, np.float32)], defines={"VARIANT": variant})
