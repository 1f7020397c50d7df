# SPDX-License-Identifier: BSD-3-Clause
"""Hazards between the pipes of one core that involve the scalar unit or GM (twin/include/twin/sync.h):
LocalTensor::GetValue/SetValue run on pipe S like any copy or vector instruction, and GM bytes that
one pipe of a core wrote (or read) need the same ordering before another pipe of that core touches
them. Each case is run broken (the rule error names both pipes and the missing event) and fixed (it
passes and computes the right values)."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

BLOCK = 64  # float32 elements

# params = [case, fixed]. x: 2 blocks in; y: 2 blocks out (y[0] is also the GM scratch of cases 6-11).
SOURCE = """
template <HardEvent evt>
void Order(bool fixed)
{
    if (fixed) {
        SetFlag<evt>(EVENT_ID0);
        WaitFlag<evt>(EVENT_ID0);
    }
}

extern "C" __global__ __aicore__ void hazard_case(GM_ADDR x, GM_ADDR y, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 2);
    const int32_t kase = pg.GetValue(0);
    const bool fixed = pg.GetValue(1) != 0;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 2 * BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * BLOCK);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, BLOCK * sizeof(float));
    pipe.InitBuffer(b, BLOCK * sizeof(float));
    const LocalTensor<float> at = a.Get<float>(), bt = b.Get<float>();
    float value = 0.0f;
    switch (kase) {
    case 0:  // S reads what MTE2 copied in
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_S>(fixed);
        value = at.GetValue(3);
        break;
    case 1:  // S reads a vector result
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_V>(true);
        Muls(bt, at, 2.0f, BLOCK);
        Order<HardEvent::V_S>(fixed);
        value = bt.GetValue(3);
        break;
    case 2:  // V reads what S wrote
        for (int32_t i = 0; i < BLOCK; ++i) at.SetValue(i, float(i));
        Order<HardEvent::S_V>(fixed);
        Adds(bt, at, 1.0f, BLOCK);
        Order<HardEvent::V_MTE3>(true);
        DataCopy(yg, bt, BLOCK);
        break;
    case 3:  // MTE3 copies out what S wrote
        for (int32_t i = 0; i < BLOCK; ++i) at.SetValue(i, float(2 * i));
        Order<HardEvent::S_MTE3>(fixed);
        DataCopy(yg, at, BLOCK);
        break;
    case 4:  // MTE2 overwrites what S still reads
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_S>(true);
        value = at.GetValue(3);
        Order<HardEvent::S_MTE2>(fixed);
        DataCopy(at, xg[BLOCK], BLOCK);
        break;
    case 5:  // V overwrites what S still reads
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_S>(true);
        value = at.GetValue(3);
        Order<HardEvent::MTE2_V>(true);
        Order<HardEvent::S_V>(fixed);
        Duplicate(at, 0.0f, BLOCK);
        break;
    case 6:  // MTE2 reads back GM bytes MTE3 wrote
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg, at, BLOCK);
        Order<HardEvent::MTE3_MTE2>(fixed);
        DataCopy(bt, yg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg[BLOCK], bt, BLOCK);
        break;
    case 7:  // MTE3 overwrites GM bytes MTE2 still reads
        Duplicate(bt, 5.0f, BLOCK);
        Order<HardEvent::V_MTE3>(true);
        DataCopy(at, yg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(fixed);
        DataCopy(yg, bt, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg[BLOCK], at, BLOCK);
        break;
    case 8:  // MTE2 reads a GM scalar S stored
        yg.SetValue(0, 7.0f);
        Order<HardEvent::S_MTE2>(fixed);
        DataCopy(at, yg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg[BLOCK], at, BLOCK);
        break;
    case 9:  // S loads GM bytes MTE3 wrote
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg, at, BLOCK);
        Order<HardEvent::MTE3_S>(fixed);
        value = yg.GetValue(3);
        break;
    case 10:  // MTE3 writes the same GM bytes twice: the later copy must land last
        DataCopy(at, xg, BLOCK);
        DataCopy(bt, xg[BLOCK], BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        DataCopy(yg, at, BLOCK);
        if (fixed) PipeBarrier<PIPE_MTE3>();
        DataCopy(yg, bt, BLOCK);
        break;
    case 11:  // MTE3 adds into the same GM bytes twice: the atomic unit orders the adds itself
        DataCopy(at, xg, BLOCK);
        Order<HardEvent::MTE2_MTE3>(true);
        SetAtomicAdd<float>();
        DataCopy(yg, at, BLOCK);
        DataCopy(yg, at, BLOCK);
        SetAtomicNone();
        break;
    }
    if (kase == 0 || kase == 1 || kase == 4 || kase == 5 || kase == 9) {
        yg.SetValue(BLOCK, value);
    }
}
""".replace("BLOCK", str(BLOCK))

# case -> (the rule error when the ordering is missing, y's expected values when it is there: a
# function of x giving (index or slice of y, value) pairs; the rest of y keeps its -1).
CASES = {
    0: (r"LocalTensor::GetValue: data written by one pipe and then read by another .*HardEvent::MTE2_S.*"
        r"\(MTE2 wrote, S reads the TBuf buffer", lambda x: [(BLOCK, x[3])]),
    1: (r"LocalTensor::GetValue: data written by one pipe and then read .*HardEvent::V_S.*\(V wrote, S reads",
        lambda x: [(BLOCK, 2 * x[3])]),
    2: (r"Adds: data written by one pipe and then read .*HardEvent::S_V.*\(S wrote, V reads",
        lambda x: [(slice(0, BLOCK), np.arange(BLOCK) + 1.0)]),
    3: (r"DataCopy: data written by one pipe and then read .*HardEvent::S_MTE3.*\(S wrote, MTE3 reads",
        lambda x: [(slice(0, BLOCK), 2.0 * np.arange(BLOCK))]),
    4: (r"DataCopy: data read by one pipe and then overwritten by another .*HardEvent::S_MTE2.*\(S read, MTE2 "
        r"overwrites", lambda x: [(BLOCK, x[3])]),
    5: (r"Duplicate: data read by one pipe and then overwritten by another .*HardEvent::S_V.*\(S read, V "
        r"overwrites", lambda x: [(BLOCK, x[3])]),
    6: (r"core 0: DataCopy: GM bytes written by one pipe of a core and then read by another need "
        r"SetFlag/WaitFlag<HardEvent::MTE3_MTE2> .*\(MTE3 wrote them with DataCopy, MTE2 reads 256 bytes from "
        r"byte offset 0 of 'y'\)", lambda x: [(slice(0, BLOCK), x[:BLOCK]), (slice(BLOCK, 2 * BLOCK), x[:BLOCK])]),
    7: (r"core 0: DataCopy: GM bytes read by one pipe of a core and then overwritten by another need "
        r"SetFlag/WaitFlag<HardEvent::MTE2_MTE3> .*\(MTE2 read them, MTE3 writes 256 bytes from byte offset 0 of 'y'\)",
        lambda x: [(slice(0, BLOCK), 5.0)]),
    8: (r"core 0: DataCopy: GM bytes written by one pipe .*HardEvent::S_MTE2.*\(S wrote them with "
        r"GlobalTensor::SetValue, MTE2 reads 4 bytes", lambda x: [(0, 7.0), (BLOCK, 7.0)]),
    9: (r"core 0: GlobalTensor::GetValue: GM bytes written by one pipe .*HardEvent::MTE3_S.*\(MTE3 wrote them "
        r"with DataCopy, S reads 4 bytes from byte offset 12 of 'y'\)", lambda x: [(slice(0, BLOCK), x[:BLOCK]), (BLOCK, x[3])]),
    10: (r"core 0: DataCopy: GM bytes written by one pipe of a core and then overwritten by the same pipe need "
         r"PipeBarrier<PIPE_MTE3> or PipeBarrier<PIPE_ALL>", lambda x: [(slice(0, BLOCK), x[BLOCK:])]),
}


# The cases whose missing ordering involves the scalar pipe: the ones --cce-auto-sync orders itself.
SCALAR_CASES = (0, 1, 2, 3, 4, 5, 8, 9)


def launch(case: int, fixed: bool, x: np.ndarray, y: np.ndarray, auto_sync: bool = False):
    return run(SOURCE, "hazard_case", {"x": x, "y": y, "params": params(case, int(fixed))}, auto_sync=auto_sync)


def expected_y(case: int, x: np.ndarray) -> np.ndarray:
    expected = np.full(2 * BLOCK, -1.0, np.float32)
    for where, value in CASES[case][1](x):
        expected[where] = value
    return expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_missing_ordering_is_a_rule_error(case, rng):
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=CASES[case][0]):
        launch(case, False, x, np.full(2 * BLOCK, -1.0, np.float32))


@pytest.mark.parametrize("case", sorted(CASES))
def test_with_the_ordering_it_passes_and_computes(case, rng):
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    y = np.full(2 * BLOCK, -1.0, np.float32)
    launch(case, True, x, y)
    np.testing.assert_array_equal(y, expected_y(case, x))


@pytest.mark.parametrize("case", SCALAR_CASES)
def test_auto_sync_orders_the_scalar_pipe_as_the_compiler_does(case, rng):
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    y = np.full(2 * BLOCK, -1.0, np.float32)
    launch(case, False, x, y, auto_sync=True)
    np.testing.assert_array_equal(y, expected_y(case, x))


@pytest.mark.parametrize("case", sorted(set(CASES) - set(SCALAR_CASES)))
def test_auto_sync_leaves_the_copy_pipes_to_the_kernel(case, rng):
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=CASES[case][0]):
        launch(case, False, x, np.full(2 * BLOCK, -1.0, np.float32), auto_sync=True)


def test_overlapping_atomic_adds_of_one_core_need_no_barrier(rng):
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    y = np.full(2 * BLOCK, -1.0, np.float32)
    expected = y.copy()
    expected[:BLOCK] = (expected[:BLOCK] + x[:BLOCK]) + x[:BLOCK]
    launch(11, False, x, y)
    np.testing.assert_array_equal(y, expected)
