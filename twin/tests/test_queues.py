# SPDX-License-Identifier: BSD-3-Clause
"""TPipe, TQue and TBuf: buffer layout and capacity, FIFO order and depth, a reallocated buffer's
bytes and TBuf contents that persist between Get calls, TPipe::Reset, the TPipe's event ids, FreeTensor's
non-const parameter."""
import numpy as np
import pytest

from ascendc_twin import _twin
from ascendc_twin.errors import KernelCompileError, TwinRuleError
from ascendc_twin import compile_kernel
from small_kernels import PRELUDE, params, run

BLOCK = 64  # float32 elements

# One kernel (one compile): params = [case, argument]. x and y are float32, info is int32 zeros.
SOURCE = """
// A tensor's UB address from GetPhyAddr: an integer on the NPU and the twin, a host pointer in CANN's
// CPU-debug mode; the C-style cast takes either.
template <typename T>
int32_t UbAddr(const LocalTensor<T> &t) { return int32_t((uint64_t)t.GetPhyAddr()); }

// Depth 2: two tensors queued before the first DeQue come out in the order they went in.
void Fifo(const GlobalTensor<float> &xg, const GlobalTensor<float> &yg, GlobalTensor<int32_t> &info)
{
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> q;
    pipe.InitBuffer(q, 2, BLOCK * sizeof(float));
    LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
    DataCopy(a, xg, BLOCK);
    DataCopy(b, xg[BLOCK], BLOCK);
    q.EnQue(a);
    info.SetValue(0, q.VacantInQue());
    q.EnQue(b);
    info.SetValue(1, q.GetTensorCountInQue());
    info.SetValue(2, q.VacantInQue());
    LocalTensor<float> first = q.DeQue<float>(), second = q.DeQue<float>();
    info.SetValue(3, q.HasTensorInQue());
    DataCopy(yg, first, BLOCK);
    DataCopy(yg[BLOCK], second, BLOCK);
    q.FreeTensor(first);
    q.FreeTensor(second);
}

// UB byte offsets of three 33-byte queue buffers and a 100-byte TBuf, and the TBuf views' sizes.
void BufferLayout(GlobalTensor<int32_t> &info)
{
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(q, 3, 33);
    pipe.InitBuffer(scratch, 100);
    LocalTensor<uint8_t> t[3];
    for (int i = 0; i < 3; ++i) {
        t[i] = q.AllocTensor<uint8_t>();
        info.SetValue(i, UbAddr(t[i]));
    }
    info.SetValue(3, t[0].GetSize());
    info.SetValue(4, UbAddr(scratch.Get<float>()));
    info.SetValue(5, scratch.Get<float>().GetSize());
    info.SetValue(6, scratch.Get<half>(10).GetSize());
    info.SetValue(7, UbAddr(scratch.GetWithOffset<float>(8, 64)));
    for (int i = 0; i < 3; ++i) {
        q.FreeTensor(t[i]);
    }
}

void Capacity(int32_t bytes)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(scratch, bytes);
}

// A buffer filled, copied out and freed, then allocated again, refilled or not.
void Reuse(const GlobalTensor<float> &xg, const GlobalTensor<float> &yg, bool refill)
{
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    for (int round = 0; round < 2; ++round) {
        LocalTensor<float> t = q.AllocTensor<float>();
        if (round == 0 || refill) DataCopy(t, xg[round * BLOCK], BLOCK);
        q.EnQue(t);
        t = q.DeQue<float>();
        DataCopy(yg[round * BLOCK], t, BLOCK);
        q.FreeTensor(t);
    }
}

// What one Get wrote, a later Get of the same TBuf reads; after TPipe::Reset old views are stale.
void Scratch(const GlobalTensor<float> &xg, const GlobalTensor<float> &yg, GlobalTensor<int32_t> &info,
             bool stale)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> first, second;
    pipe.InitBuffer(first, 256);
    pipe.InitBuffer(second, 2 * BLOCK * sizeof(float));
    LocalTensor<float> old = second.Get<float>();
    DataCopy(old, xg, 2 * BLOCK);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(yg, second.Get<float>(BLOCK), BLOCK);
    DataCopy(yg[BLOCK], second.GetWithOffset<float>(BLOCK, BLOCK * sizeof(float)), BLOCK);
    PipeBarrier<PIPE_ALL>();
    pipe.Reset();
    pipe.InitBuffer(second, 64);
    info.SetValue(0, UbAddr(second.Get<float>()));
    if (stale) DataCopy(old, xg, BLOCK);
}

// Which event ids the queue and the explicit calls take and give back (lowest free first).
void Events(const GlobalTensor<float> &xg, GlobalTensor<int32_t> &info)
{
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, BLOCK * sizeof(float));
    const TEventID a = pipe.AllocEventID<HardEvent::MTE2_V>();
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, BLOCK);
    q.EnQue(t);
    info.SetValue(0, a);
    info.SetValue(1, pipe.FetchEventID(HardEvent::MTE2_V));
    info.SetValue(2, pipe.FetchEventID<HardEvent::MTE2_V>());
    pipe.ReleaseEventID<HardEvent::MTE2_V>(a);
    info.SetValue(3, pipe.FetchEventID(HardEvent::MTE2_V));
    t = q.DeQue<float>();
    const TEventID b = pipe.AllocEventID<HardEvent::MTE2_V>(), c = pipe.AllocEventID<HardEvent::MTE2_V>();
    info.SetValue(4, b);
    info.SetValue(5, c);
    q.FreeTensor(t);
    info.SetValue(6, pipe.FetchEventID(HardEvent::V_MTE2));
    LocalTensor<float> u = q.AllocTensor<float>();
    info.SetValue(7, pipe.FetchEventID(HardEvent::V_MTE2));
    q.FreeTensor(u);
    info.SetValue(8, pipe.FetchEventID(HardEvent::V_MTE2));
    u = q.AllocTensor<float>();
    info.SetValue(9, pipe.FetchEventID(HardEvent::V_MTE2));
    q.FreeTensor(u);
    pipe.ReleaseEventID<HardEvent::MTE2_V>(b);
    pipe.ReleaseEventID<HardEvent::MTE2_V>(c);
    pipe.Reset();
    info.SetValue(10, pipe.FetchEventID(HardEvent::V_MTE2));
}

extern "C" __global__ __aicore__ void queue_case(GM_ADDR x, GM_ADDR y, GM_ADDR info, GM_ADDR params)
{
    GlobalTensor<int32_t> pg, ig;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, 2);
    ig.SetGlobalBuffer((__gm__ int32_t *)info, INFO);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x);
    yg.SetGlobalBuffer((__gm__ float *)y);
    const int32_t arg = pg.GetValue(1);
    switch (pg.GetValue(0)) {
    case 0: Fifo(xg, yg, ig); break;
    case 1: BufferLayout(ig); break;
    case 2: Capacity(arg); break;
    case 3: Reuse(xg, yg, arg != 0); break;
    case 4: Scratch(xg, yg, ig, arg != 0); break;
    case 5: Events(xg, ig); break;
    }
}
""".replace("BLOCK", str(BLOCK)).replace("INFO", "16")


def launch(case, arg=0, soc="Ascend910B2"):
    """Runs one case on fresh x; returns (x, y, info)."""
    x = np.random.default_rng().standard_normal(2 * BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    info = np.zeros(16, np.int32)
    run(SOURCE, "queue_case", [x, y, info, params(case, arg)], soc=soc)
    return x, y, info


def test_depth_two_queue_is_fifo():
    x, y, info = launch(0)
    np.testing.assert_array_equal(y, x)
    # vacant after one EnQue, count 2 and not vacant after two, empty after two DeQue
    np.testing.assert_array_equal(info[:4], [1, 2, 0, 0])


def test_buffers_are_rounded_to_32_bytes_and_packed():
    _, _, info = launch(1)
    # queue buffers at 0, 64, 128 (33 -> 64 bytes); the 100-byte TBuf (-> 128) after them
    np.testing.assert_array_equal(info[:8], [0, 64, 128, 64, 192, 32, 10, 192 + 64])


@pytest.mark.parametrize("soc", [row["name"] for row in _twin.soc_table()])
def test_ub_capacity_is_the_soc_table_less_its_reserve(soc):
    row = next(r for r in _twin.soc_table() if r["name"] == soc)
    usable = row["ub_bytes"] - row["ub_reserved_bytes"]
    assert usable == row["ub_usable_bytes"]
    launch(2, usable, soc=soc)
    with pytest.raises(TwinRuleError, match=rf"core 0: TPipe::InitBuffer: .*> limit {usable} bytes"):
        launch(2, usable + 1, soc=soc)


def test_reallocated_buffer_keeps_its_bytes():
    """AllocTensor moves no data: a one-buffer queue hands back the buffer with what it held (CANN's
    add_rms_norm reads x1 + x2 so), and a refill replaces it."""
    x, y, _ = launch(3, 1)
    np.testing.assert_array_equal(y, x)
    x, y, _ = launch(3, 0)
    np.testing.assert_array_equal(y, np.concatenate([x[:BLOCK], x[:BLOCK]]))


def test_tbuf_keeps_its_bytes_and_reset_makes_old_views_stale():
    x, y, info = launch(4)
    np.testing.assert_array_equal(y, x)
    assert info[0] == 0  # after Reset, buffers are carved from the start of UB again
    with pytest.raises(TwinRuleError, match=r"core 0: DataCopy: the LocalTensor is used after"):
        launch(4, 1)


def test_event_ids_are_taken_lowest_first_and_given_back():
    _, _, info = launch(5)
    # AllocEventID takes 0, EnQue 1; FetchEventID names the lowest free (2) without taking it; after
    # ReleaseEventID 0 is free again. DeQue gives 1 back, so the next AllocEventIDs take 0 and 1.
    np.testing.assert_array_equal(info[:6], [0, 2, 2, 0, 0, 1])
    # FreeTensor holds V_MTE2 0; the cursor's next buffer was never freed, so its AllocTensor gives
    # nothing back; its FreeTensor holds 1; allocating the first buffer again gives 0 back; Reset
    # empties the pool.
    np.testing.assert_array_equal(info[6:11], [1, 1, 2, 0, 0])


FREE_CONST = PRELUDE + """
extern "C" __global__ __aicore__ void free_const(GM_ADDR x)
{
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    QUALIFIER LocalTensor<float> t = q.AllocTensor<float>();
    q.FreeTensor(t);
}
"""


@pytest.mark.parametrize("qualifier", ["", "const"])
def test_free_tensor_takes_a_non_const_tensor(tmp_path, qualifier):
    # As in the real TQueBind: FreeTensor(LocalTensor<T> &), so a const tensor does not bind.
    source = tmp_path / f"free_const_{qualifier or 'plain'}.cpp"
    source.write_text(FREE_CONST.replace("QUALIFIER", qualifier))
    if qualifier:
        with pytest.raises(KernelCompileError, match=r"(?s)error:.*FreeTensor"):
            compile_kernel(source, "free_const")
    else:
        assert compile_kernel(source, "free_const").is_file()


# One TPipe used twice copies out to the same GM bytes: Destroy between the rounds ends in
# PipeBarrier<PIPE_ALL> as CANN's does, which orders the second round's MTE3 write after the first's.
# Reset takes the buffers back without that barrier, so the rewrite needs one of its own.
TWO_PIPES = PRELUDE + """
template <bool kDestroy>
void CopyTwice(GM_ADDR x, GM_ADDR y)
{
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 64);
    yg.SetGlobalBuffer((__gm__ float *)y, 64);
    TPipe pipe;
    for (int round = 0; round < 2; ++round) {
        TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(float));
        LocalTensor<float> t = q.AllocTensor<float>();
        DataCopy(t, xg, 64);
        q.EnQue(t);
        t = q.DeQue<float>();
        DataCopy(yg, t, 64);
        q.FreeTensor(t);
        if (kDestroy) {
            pipe.Destroy();
        } else {
            pipe.Reset();
        }
    }
}
extern "C" __global__ __aicore__ void two_pipes_destroy(GM_ADDR x, GM_ADDR y) { CopyTwice<true>(x, y); }
extern "C" __global__ __aicore__ void two_pipes_reset(GM_ADDR x, GM_ADDR y) { CopyTwice<false>(x, y); }
"""


def test_destroy_orders_the_next_pipes_copies_and_reset_does_not(run_source, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    run_source(TWO_PIPES, "two_pipes_destroy", [x, y])
    np.testing.assert_array_equal(y, x)
    with pytest.raises(TwinRuleError, match=r"core 0: DataCopy: GM bytes written by one pipe of a core and then "
                                            r"overwritten by the same pipe need PipeBarrier<PIPE_MTE3>"):
        run_source(TWO_PIPES, "two_pipes_reset", [x, y])


PEAK = """#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_peak(GM_ADDR unused)
{
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(q, 2, 33);  // two buffers of 64 bytes
    pipe.InitBuffer(a, 100);    // 128 bytes: 256 in all
    pipe.Reset();
    pipe.InitBuffer(b, 32 * GetBlockIdx() + 32);
}
"""


@pytest.mark.parametrize("block_dim", [1, 12])
def test_ub_peak_is_the_most_the_pipe_held_at_once(run_source, block_dim):
    # Each InitBuffer counts its bytes rounded up to 32; a Reset gives them back but not the peak.
    stats = run_source(PEAK, "ub_peak", [None], block_dim=block_dim)
    peaks = [core["ub_peak_bytes"] for core in stats.cores]
    assert peaks == [max(256, 32 * b + 32) for b in range(block_dim)]
    assert stats.total["ub_peak_bytes"] == max(peaks)
