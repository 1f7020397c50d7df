# SPDX-License-Identifier: BSD-3-Clause
"""SyncAll (hardware and software forms) exchanging data between cores through GM, atomic adds from
many cores, and what SetFlag/WaitFlag and PipeBarrier order between the pipes of one core."""
import itertools

import ml_dtypes
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, random_array, run

BLOCK = 64  # float32 elements each core publishes per round

# One kernel (one compile): params = [case, argument]. x, y and ws are GM buffers; ws is int32 zeros.
SOURCE = """
// GM -> UB -> GM through a queue that orders MTE2 before MTE3.
using Through = TQueBind<TPosition::VECIN, TPosition::VECOUT, 1>;

template <typename T>
void Move(Through &q, const GlobalTensor<T> &dst, const GlobalTensor<T> &src, int32_t n)
{
    LocalTensor<T> t = q.AllocTensor<T>();
    DataCopy(t, src, n);
    q.EnQue(t);
    t = q.DeQue<T>();
    DataCopy(dst, t, n);
    q.FreeTensor(t);
}

// Three rounds: publish my block in GM, SyncAll, take my right neighbour's block, SyncAll.
// After them core i holds x's block (i + 3) mod cores.
void Exchange(GM_ADDR x, GM_ADDR y, GM_ADDR ws, bool software)
{
    const int32_t cores = GetBlockNum(), i = GetBlockIdx(), right = (i + 1) % cores;
    GlobalTensor<float> xg, shared, mine;
    xg.SetGlobalBuffer((__gm__ float *)x + i * BLOCK, BLOCK);
    shared.SetGlobalBuffer((__gm__ float *)y, cores * BLOCK);
    mine.SetGlobalBuffer((__gm__ float *)y + (cores + i) * BLOCK, BLOCK);
    GlobalTensor<int32_t> workspace;
    workspace.SetGlobalBuffer((__gm__ int32_t *)ws, cores * 8);
    TPipe pipe;
    Through q;
    TBuf<TPosition::VECCALC> flags;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    pipe.InitBuffer(flags, cores * 32);
    Move(q, mine, xg, BLOCK);
    for (int round = 0; round < 3; ++round) {
        Move(q, shared[i * BLOCK], mine, BLOCK);
        if (software) SyncAll(workspace, flags.Get<int32_t>()); else SyncAll();
        Move(q, mine, shared[right * BLOCK], BLOCK);
        if (software) SyncAll(workspace, flags.Get<int32_t>()); else SyncAll();
    }
}

// Every core adds its 256-byte row of x into y.
template <typename T>
void AtomicRows(GM_ADDR x, GM_ADDR y)
{
    constexpr int32_t n = 256 / sizeof(T);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T *)x + GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ T *)y, n);
    TPipe pipe;
    Through q;
    pipe.InitBuffer(q, 1, n * sizeof(T));
    LocalTensor<T> t = q.AllocTensor<T>();
    DataCopy(t, xg, n);
    q.EnQue(t);
    t = q.DeQue<T>();
    SetAtomicAdd<T>();
    DataCopy(yg, t, n);
    SetAtomicNone();
    q.FreeTensor(t);
}

// Two copies in, each followed by SetFlag<MTE2_V> on the same id, then two WaitFlags. The vector pipe
// (a UB -> UB copy) reads the second buffer after the first WaitFlag when `early`, else after both.
void TwoFlags(GM_ADDR x, GM_ADDR y, bool early)
{
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 2 * BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * BLOCK);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    pipe.InitBuffer(a, BLOCK * sizeof(float));
    pipe.InitBuffer(b, BLOCK * sizeof(float));
    pipe.InitBuffer(c, 2 * BLOCK * sizeof(float));
    DataCopy(a.Get<float>(), xg, BLOCK);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID4);
    DataCopy(b.Get<float>(), xg[BLOCK], BLOCK);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID4);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID4);
    DataCopy(c.Get<float>(), a.Get<float>(), BLOCK);
    if (!early) WaitFlag<HardEvent::MTE2_V>(EVENT_ID4);
    DataCopy(c.Get<float>()[BLOCK], b.Get<float>(), BLOCK);
    if (early) WaitFlag<HardEvent::MTE2_V>(EVENT_ID4);
    PipeBarrier<PIPE_V>();
    const event_t toMte3 = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(toMte3);
    WaitFlag<HardEvent::V_MTE3>(toMte3);
    DataCopy(yg, c.Get<float>(), 2 * BLOCK);
    PipeBarrier<PIPE_ALL>();
}

// MTE2 fills a buffer that MTE3 copies out, ordered only through the vector pipe: MTE2 -> V, then
// V -> MTE3 (the hardware chains them); `broken` leaves out the first link.
void Chain(GM_ADDR x, GM_ADDR y, bool broken)
{
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, BLOCK);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, BLOCK * sizeof(float));
    DataCopy(a.Get<float>(), xg, BLOCK);
    if (!broken) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
    DataCopy(yg, a.Get<float>(), BLOCK);
}

// A TBuf filled by MTE2 before a queue buffer's EnQue is visible to V after its DeQue (the queue's
// own MTE2 -> V flag orders all earlier MTE2 work); when `late`, the TBuf is filled after the EnQue.
void QueueOrders(GM_ADDR x, GM_ADDR y, bool late)
{
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 2 * BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * BLOCK);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> gamma, out;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    pipe.InitBuffer(gamma, BLOCK * sizeof(float));
    pipe.InitBuffer(out, 2 * BLOCK * sizeof(float));
    if (!late) DataCopy(gamma.Get<float>(), xg[BLOCK], BLOCK);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, BLOCK);
    q.EnQue(t);
    if (late) DataCopy(gamma.Get<float>(), xg[BLOCK], BLOCK);
    t = q.DeQue<float>();
    DataCopy(out.Get<float>(), t, BLOCK);
    DataCopy(out.Get<float>()[BLOCK], gamma.Get<float>(), BLOCK);
    q.FreeTensor(t);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID2);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID2);
    DataCopy(yg, out.Get<float>(), 2 * BLOCK);
}

extern "C" __global__ __aicore__ void sync_case(GM_ADDR x, GM_ADDR y, GM_ADDR ws, GM_ADDR params)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, 2);
    const int32_t arg = pg.GetValue(1);
    switch (pg.GetValue(0)) {
    case 0: Exchange(x, y, ws, arg != 0); break;
    case 1: AtomicRows<float>(x, y); break;
    case 2: AtomicRows<half>(x, y); break;
    case 3: AtomicRows<bfloat16_t>(x, y); break;
    case 4: AtomicRows<int32_t>(x, y); break;
    case 5: TwoFlags(x, y, arg != 0); break;
    case 6: Chain(x, y, arg != 0); break;
    case 7: QueueOrders(x, y, arg != 0); break;
    }
}
""".replace("BLOCK", str(BLOCK))

ATOMIC_CASES = {np.dtype(np.float32): 1, np.dtype(np.float16): 2, np.dtype(ml_dtypes.bfloat16): 3,
                np.dtype(np.int32): 4}


def launch(case, arg, x, y, block_dim=1, ws=None):
    ws = np.zeros(48 * 8, np.int32) if ws is None else ws
    return run(SOURCE, "sync_case", [x, y, ws, params(case, arg)], block_dim=block_dim)


@pytest.mark.parametrize("software", [False, True], ids=["hardware", "software"])
@pytest.mark.parametrize("cores", [2, 8])
def test_sync_all_orders_a_gm_exchange(software, cores):
    x = np.random.default_rng().standard_normal(cores * BLOCK).astype(np.float32)
    y = np.zeros(2 * cores * BLOCK, np.float32)
    ws = np.zeros(48 * 8, np.int32)
    stats = launch(0, int(software), x, y, block_dim=cores, ws=ws)
    expected = np.roll(x.reshape(cores, BLOCK), -3, axis=0)
    np.testing.assert_array_equal(y[cores * BLOCK:].reshape(cores, BLOCK), expected)
    assert [c["sync_alls"] for c in stats.cores] == [6] * cores
    if software:  # each core's flag counts its SyncAll calls, as the documented algorithm does
        np.testing.assert_array_equal(ws[:cores * 8:8], np.full(cores, 6))


def test_software_sync_all_needs_a_zeroed_workspace():
    cores = 4
    ws = np.zeros(48 * 8, np.int32)
    ws[8] = 5  # core 1's flag left over from an earlier launch
    with pytest.raises(TwinRuleError, match=r"core \d: SyncAll: gmWorkspace must be zeroed before the launch"):
        launch(0, 1, np.zeros(cores * BLOCK, np.float32), np.zeros(2 * cores * BLOCK, np.float32), cores, ws)


@pytest.mark.parametrize("dtype", list(ATOMIC_CASES), ids=str)
def test_atomic_adds_accumulate_across_cores(dtype):
    rng = np.random.default_rng()
    cores, n = 8, 256 // dtype.itemsize
    x = random_array(rng, cores * n, dtype)
    y0 = random_array(rng, n, dtype)
    y = y0.copy()
    launch(ATOMIC_CASES[dtype], 0, x, y, block_dim=cores)
    rows = x.reshape(cores, n)
    if dtype.kind == "i":  # wrapping integer adds give the same sum in any order
        expected = (y0.astype(np.int64) + rows.astype(np.int64).sum(axis=0)).astype(np.uint32).view(np.int32)
        np.testing.assert_array_equal(y, expected)
        return
    # Cores add whole rows in an unspecified order, each add rounding once to the dtype: y must be
    # the sequential sum in one of the cores! orders.
    orders = np.array(list(itertools.permutations(range(cores))))
    acc = np.broadcast_to(y0, (len(orders), n))
    for step in range(cores):
        acc = acc + rows[orders[:, step]]
    assert np.any(np.all(acc.view(np.uint16 if dtype.itemsize == 2 else np.uint32)
                         == y.view(np.uint16 if dtype.itemsize == 2 else np.uint32), axis=1))


def test_each_wait_flag_orders_up_to_its_own_set_flag():
    x = np.random.default_rng().standard_normal(2 * BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    stats = launch(5, 0, x, y)
    np.testing.assert_array_equal(y, x)
    assert stats.total["pipe_barriers"] == 6  # three WaitFlags, PipeBarrier<PIPE_V>, <PIPE_ALL>, TPipe::Destroy's PIPE_ALL
    with pytest.raises(TwinRuleError, match=r"core 0: DataCopy: data written by one pipe and then read by another"
                                            r" .*HardEvent::MTE2_V"):
        launch(5, 1, x, y)


def test_flags_order_pipes_transitively():
    x = np.random.default_rng().standard_normal(BLOCK).astype(np.float32)
    y = np.zeros(BLOCK, np.float32)
    launch(6, 0, x, y)
    np.testing.assert_array_equal(y, x)
    with pytest.raises(TwinRuleError, match=r"core 0: DataCopy: .*HardEvent::MTE2_MTE3"):
        launch(6, 1, x, y)


def test_queue_handoff_orders_all_earlier_work_of_the_pipe():
    x = np.random.default_rng().standard_normal(2 * BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    launch(7, 0, x, y)
    np.testing.assert_array_equal(y, x)
    with pytest.raises(TwinRuleError, match=r"core 0: DataCopy: data written by one pipe and then read .*MTE2_V"):
        launch(7, 1, x, y)
