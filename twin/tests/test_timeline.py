# SPDX-License-Identifier: BSD-3-Clause
"""The twin's pipeline timeline (twin/include/twin/timeline.h) on tiny hand-written kernels: the
dependencies the kernel's own synchronisation creates, double buffering, barriers, SyncAll, the HBM
share and L2 re-reads. Expected times are computed from the SoC table and the model constants."""
from __future__ import annotations

import numpy as np
import pytest

from ascendc_twin import _twin
from ascendc_twin.model import load_model
from ascendc_twin import model_constants

TILE = 4096  # floats per tile: 16 KiB, 64 fp32 repeats

HEADER = f"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t TILE = {TILE};

// x (xn floats) in through a VECIN queue of `bufs` tiles, y (one tile per core) out through a VECOUT one.
struct Io {{
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TQue<QuePosition::VECOUT, 1> qout;
    GlobalTensor<float> xg, yg;
    __aicore__ inline Io(GM_ADDR x, uint64_t xn, GM_ADDR y, int bufs)
    {{
        pipe.InitBuffer(qin, bufs, TILE * sizeof(float));
        pipe.InitBuffer(qout, 1, TILE * sizeof(float));
        xg.SetGlobalBuffer((__gm__ float *)x + GetBlockIdx() * xn, xn);
        yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * TILE, TILE);
    }}
}};

// V -> MTE3 through a VECOUT queue: the tile goes to GM.
__aicore__ inline void WriteBack(TQue<QuePosition::VECOUT, 1> &q, const LocalTensor<float> &t, const GlobalTensor<float> &g)
{{
    q.EnQue(t);
    LocalTensor<float> out = q.DeQue<float>();
    DataCopy(g, out, TILE);
    q.FreeTensor(out);
}}
"""

# Copy a tile in, add it OPS times into an accumulator, TILES times; BUFS buffers in the input queue.
ACCUMULATE = HEADER + """
extern "C" __global__ __aicore__ void accumulate(GM_ADDR x, GM_ADDR y)
{
    Io io(x, TILES * TILE, y, BUFS);
    TQue<QuePosition::VECIN, 1> &qin = io.qin;
    LocalTensor<float> acc = io.qout.AllocTensor<float>();
    Duplicate(acc, 0.0f, TILE);
    for (int i = 0; i < TILES; ++i) {
        LocalTensor<float> in = qin.AllocTensor<float>();
        DataCopy(in, io.xg[i * TILE], TILE);
        qin.EnQue(in);
        LocalTensor<float> tile = qin.DeQue<float>();
        for (int k = 0; k < OPS; ++k) {
            Add(acc, acc, tile, TILE);
        }
        qin.FreeTensor(tile);
    }
    WriteBack(io.qout, acc, io.yg);
}
"""

# A copy stream and a vector stream that share no data: only ORDER (a barrier, or flags) ties them.
STREAMS = HEADER + """
extern "C" __global__ __aicore__ void streams(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> inb, workb;
    pipe.InitBuffer(inb, TILE * sizeof(float));
    pipe.InitBuffer(workb, TILE * sizeof(float));
    LocalTensor<float> in = inb.Get<float>(), work = workb.Get<float>();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, TILES * TILE);
    yg.SetGlobalBuffer((__gm__ float *)y, TILE);
    Duplicate(work, 1.0f, TILE);
    for (int i = 0; i < TILES; ++i) {
        DataCopy(in, xg[i * TILE], TILE);
        if (ORDER == 1) {
            PipeBarrier<PIPE_ALL>();
        }
        for (int k = 0; k < OPS; ++k) {
            Muls(work, work, 0.5f, TILE);
        }
        if (ORDER == 1) {
            PipeBarrier<PIPE_ALL>();
        }
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, work, TILE);
}
"""


@pytest.fixture(scope="module")
def model():
    return load_model("Ascend910B2")


def copy_in_cycles(model, nbytes: int, cores: int) -> float:
    share = min(model.hbm_share(cores), model.soc["ddr_bytes_per_cycle"])
    return model["copy_issue_cycles"] + nbytes / share


def copy_out_cycles(model, nbytes: int, cores: int) -> float:
    share = min(model.hbm_share(cores), model.soc["ub_to_ddr_bytes_per_cycle"])
    return model["copy_issue_cycles"] + nbytes / share


def vector_cycles(model, repeats: int) -> float:
    return model["vector_issue_cycles"] + repeats * model["vector_cycles_per_repeat"]


def run_accumulate(run_source, rng, *, bufs, tiles, ops, cores=1):
    x = rng.standard_normal(cores * tiles * TILE, dtype=np.float32)
    y = np.zeros(cores * TILE, dtype=np.float32)
    stats = run_source(ACCUMULATE, "accumulate", [x, y], block_dim=cores,
                       defines={"BUFS": bufs, "TILES": tiles, "OPS": ops})
    want = np.zeros((cores, TILE), dtype=np.float32)
    for tile in x.reshape(cores, tiles, TILE).transpose(1, 0, 2):
        for _ in range(ops):
            want += tile
    np.testing.assert_array_equal(y.reshape(cores, TILE), want)
    return stats


def test_double_buffering_overlaps_copy_in_with_compute(run_source, rng, model):
    tiles, ops = 12, 7
    with model_constants({"flag_sync_cycles": 0.0}):  # the handovers' own latency is not the point here
        single = run_accumulate(run_source, rng, bufs=1, tiles=tiles, ops=ops).cores[0]
        double = run_accumulate(run_source, rng, bufs=2, tiles=tiles, ops=ops).cores[0]
    t_in = copy_in_cycles(model, TILE * 4, 1)
    t_v = ops * vector_cycles(model, TILE // 64)
    ends = vector_cycles(model, TILE // 64) + copy_out_cycles(model, TILE * 4, 1)  # Duplicate, last copy-out
    # One buffer: the next copy waits for the FreeTensor after the adds, so copy and adds alternate.
    assert single["model_cycles"] == pytest.approx(tiles * (t_in + t_v) + ends, rel=0.03)
    # Two buffers: the copy of tile i+1 runs under the adds of tile i; the gain is the hidden part.
    hidden = single["model_cycles"] - double["model_cycles"]
    assert hidden == pytest.approx((tiles - 1) * min(t_in, t_v), rel=0.03)
    assert single["busy_v_cycles"] == double["busy_v_cycles"]
    # A copy's set-up shows on MTE2 only when nothing queued ahead of it on the pipe hides it: always
    # with one buffer, for some copies with two.
    assert single["busy_mte2_cycles"] == pytest.approx(tiles * t_in, abs=tiles)
    assert tiles * (t_in - model["copy_issue_cycles"]) <= double["busy_mte2_cycles"] < single["busy_mte2_cycles"]


@pytest.mark.parametrize("order", [0, 1])
def test_pipe_barrier_serialises_independent_pipes(run_source, rng, model, order):
    tiles, ops = 8, 6
    x = rng.standard_normal(tiles * TILE, dtype=np.float32)
    y = np.zeros(TILE, dtype=np.float32)
    core = run_source(STREAMS, "streams", [x, y], defines={"TILES": tiles, "OPS": ops, "ORDER": order}).cores[0]
    np.testing.assert_array_equal(y, np.full(TILE, 0.5 ** (tiles * ops), dtype=np.float32))
    t_in = copy_in_cycles(model, TILE * 4, 1)
    t_v = ops * vector_cycles(model, TILE // 64)
    first = vector_cycles(model, TILE // 64)  # the Duplicate
    last = copy_out_cycles(model, TILE * 4, 1)  # after the vector stream (V_MTE3 flag)
    if order == 1:  # every barrier waits for both pipes: the streams take turns
        assert core["model_cycles"] == pytest.approx(first + tiles * (t_in + t_v) + last, rel=0.03)
        assert core["pipe_barriers"] >= 2 * tiles
    else:  # nothing orders them: they run side by side, and each copy's set-up hides behind the one before
        copies = model["copy_issue_cycles"] + tiles * (t_in - model["copy_issue_cycles"])
        assert core["model_cycles"] == pytest.approx(max(copies, first + tiles * t_v + last), rel=0.03)


SYNC = HEADER + """
extern "C" __global__ __aicore__ void sync_cores(GM_ADDR y)
{
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> qout;
    pipe.InitBuffer(qout, 1, TILE * sizeof(float));
    GlobalTensor<float> yg;
    yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * TILE, TILE);
    LocalTensor<float> t = qout.AllocTensor<float>();
    Duplicate(t, 1.0f, TILE);
    for (int k = 0; k < (GetBlockIdx() == 0 ? HEAVY : 1); ++k) {
        Muls(t, t, 2.0f, TILE);
    }
    if (SYNC_ALL) {
        SyncAll();
    }
    WriteBack(qout, t, yg);
}
"""


@pytest.mark.parametrize("sync_all", [0, 1])
def test_sync_all_waits_for_the_slowest_core(run_source, model, sync_all):
    heavy = 40
    y = np.zeros(2 * TILE, dtype=np.float32)
    stats = run_source(SYNC, "sync_cores", [y], block_dim=2, defines={"HEAVY": heavy, "SYNC_ALL": sync_all})
    np.testing.assert_array_equal(y.reshape(2, TILE)[:, 0], [2.0 ** heavy, 2.0])
    fast, slow = stats.cores[1], stats.cores[0]
    slow_work = (heavy + 1) * vector_cycles(model, TILE // 64)
    if sync_all:
        assert fast["sync_alls"] == slow["sync_alls"] == 1
        assert fast["model_cycles"] >= slow_work + model["sync_all_cycles"]
        assert fast["model_cycles"] == pytest.approx(slow["model_cycles"], abs=2 * model["scalar_issue_cycles"])
    else:
        assert fast["model_cycles"] < slow_work / 4


REREAD = HEADER + """
extern "C" __global__ __aicore__ void reread(GM_ADDR x, GM_ADDR y)
{
    Io io(x, TILE, y, 1);
    const float scale = io.xg.GetValue(0);  // a scalar GM read: the scalar unit waits for it
    LocalTensor<float> acc = io.qout.AllocTensor<float>();
    Duplicate(acc, 0.0f, TILE);
    for (int pass = 0; pass < 2; ++pass) {
        LocalTensor<float> in = io.qin.AllocTensor<float>();
        DataCopy(in, io.xg, TILE);
        io.qin.EnQue(in);
        LocalTensor<float> t = io.qin.DeQue<float>();
        Add(acc, acc, t, TILE);
        io.qin.FreeTensor(t);
    }
    Muls(acc, acc, scale, TILE);
    WriteBack(io.qout, acc, io.yg);
}
"""


def test_a_second_read_comes_from_l2_writes_land_in_l2_scalar_reads_stall(run_source, rng, model):
    x = rng.standard_normal(TILE, dtype=np.float32)
    y = np.zeros(TILE, dtype=np.float32)
    core = run_source(REREAD, "reread", [x, y]).cores[0]
    np.testing.assert_array_equal(y, (x + x) * x[0])
    assert core["gm_scalar_reads"] == 1
    assert core["model_cycles"] > model["scalar_gm_cycles"] + 2 * copy_in_cycles(model, TILE * 4, 1)
    assert core["gm_read_bytes"] == 2 * TILE * 4
    assert core["l2_bytes"] == TILE * 4
    assert core["hbm_bytes"] == TILE * 4  # the first read; the write stays in L2 (room to spare)
    assert core["writeback_bytes"] == 0
    from_l2 = TILE * 4 / model.soc["l2_bytes_per_cycle"]
    assert core["busy_mte2_cycles"] == pytest.approx(
        copy_in_cycles(model, TILE * 4, 1) + model["copy_issue_cycles"] + from_l2, abs=2)


def test_a_cache_disable_hint_keeps_reads_out_of_l2_and_values_unchanged(run_source, rng):
    # The hint is set after the scalar read, so both copies go past L2; y keeps no hint.
    text = REREAD.replace("    LocalTensor<float> acc", "    io.xg.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);\n"
                                                        "    LocalTensor<float> acc", 1)
    x = rng.standard_normal(TILE, dtype=np.float32)
    y = np.zeros(TILE, dtype=np.float32)
    core = run_source(text, "reread", [x, y]).cores[0]
    np.testing.assert_array_equal(y, (x + x) * x[0])
    assert core["gm_read_bytes"] == 2 * TILE * 4
    assert core["l2_bytes"] == 0
    assert core["hbm_bytes"] == 2 * TILE * 4  # both reads; the write lands in L2


PIECES = HEADER + """
extern "C" __global__ __aicore__ void pieces(GM_ADDR x, GM_ADDR y)
{
    Io io(x, PIECE * PIECES, y, 1);
    LocalTensor<float> acc = io.qout.AllocTensor<float>();
    Duplicate(acc, 0.0f, TILE);
    // First PIECES unaligned pieces one by one, then all of them again in one copy.
    for (int i = 0; i <= PIECES; ++i) {
        const bool all = i == PIECES;
        LocalTensor<float> in = io.qin.AllocTensor<float>();
        DataCopyPad(in, io.xg[all ? 0 : i * PIECE], DataCopyExtParams(1, (all ? PIECES : 1) * PIECE * 4, 0, 0, 0),
                    DataCopyPadExtParams<float>(true, 0, 0, 0.0f));
        io.qin.EnQue(in);
        LocalTensor<float> t = io.qin.DeQue<float>();
        Add(acc, acc, t, all ? PIECES * PIECE : PIECE);
        io.qin.FreeTensor(t);
    }
    WriteBack(io.qout, acc, io.yg);
}
"""


def test_first_touches_are_counted_to_the_byte(run_source, rng):
    piece, pieces = 37, 20  # 148-byte pieces: most start and end inside a 32-byte sector
    x = rng.standard_normal(piece * pieces, dtype=np.float32)
    y = np.zeros(TILE, dtype=np.float32)
    core = run_source(PIECES, "pieces", [x, y], defines={"PIECE": piece, "PIECES": pieces}).cores[0]
    assert core["gm_read_bytes"] == 2 * x.nbytes
    assert core["l2_bytes"] == x.nbytes
    assert core["hbm_bytes"] == x.nbytes  # y's write lands in L2
    # the masked-off lanes of the short adds: 20 x (64 - 37), and 12 repeats for 740 lanes
    assert core["lane_slots"] - core["active_lanes"] == pieces * (64 - piece) + (12 * 64 - pieces * piece)
    want = np.zeros(TILE, dtype=np.float32)
    for i in range(pieces):  # every piece added at the front, in order, then the whole row on top
        want[:piece] += x[i * piece:(i + 1) * piece]
    want[:x.size] += x
    np.testing.assert_array_equal(y, want)


def test_all_cores_share_hbm_bandwidth(run_source, rng, model):
    cores, tiles = model.cores, 6
    stats = run_accumulate(run_source, rng, bufs=2, tiles=tiles, ops=1, cores=cores)
    nbytes = cores * tiles * TILE * 4  # the reads; the writes land in L2
    assert stats.total["hbm_bytes"] == nbytes
    makespan = max(c["model_cycles"] for c in stats.cores)
    share = model.hbm_share(cores)  # below the link rate: HBM is the limit
    assert share < model.soc["ddr_bytes_per_cycle"]
    write = TILE * 4 / model.soc["ub_to_ddr_bytes_per_cycle"]  # into L2 at the link's rate
    assert makespan >= nbytes / cores / share + write
    assert makespan == pytest.approx(nbytes / cores / share + write + model["copy_issue_cycles"], rel=0.1)
    assert all(c["busy_hbm_cycles"] == pytest.approx(nbytes / cores / share, abs=2) for c in stats.cores)


def test_every_soc_has_model_constants_with_sources():
    socs = {row["name"] for row in _twin.soc_table()}
    table = {row["soc"]: row for row in _twin.model_table()}
    sources = _twin.model_sources()
    assert set(table) == socs
    for row in table.values():
        assert set(row) - {"soc"} == set(sources)
        assert all(value >= 0 for key, value in row.items() if key != "soc")
    assert all(text.startswith(("measured: ", "guide: ", "range: ", "assumption")) for text in sources.values())


# One tile in from x + shift[0] floats, its 64-float repeats summed (WholeReduceSum), the sums cast to
# half and written out: one copy, one reduction and one cast on the pipes.
PRICED = HEADER + """
extern "C" __global__ __aicore__ void priced(GM_ADDR x, GM_ADDR shift, GM_ADDR y)
{
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TQue<QuePosition::VECOUT, 1> qout;
    TBuf<TPosition::VECCALC> sumb;
    pipe.InitBuffer(qin, 1, TILE * sizeof(float));
    pipe.InitBuffer(qout, 1, TILE / 64 * sizeof(half));
    pipe.InitBuffer(sumb, TILE / 64 * sizeof(float));
    GlobalTensor<float> xg;
    GlobalTensor<half> yg;
    GlobalTensor<int32_t> sg;
    sg.SetGlobalBuffer((__gm__ int32_t *)shift, 1);
    xg.SetGlobalBuffer((__gm__ float *)x + sg.GetValue(0), TILE);
    yg.SetGlobalBuffer((__gm__ half *)y, TILE / 64);
    LocalTensor<float> in = qin.AllocTensor<float>();
    DataCopy(in, xg, TILE);
    qin.EnQue(in);
    in = qin.DeQue<float>();
    LocalTensor<float> sums = sumb.Get<float>();
    WholeReduceSum(sums, in, 64, TILE / 64, 1, 1, 8);
    LocalTensor<half> out = qout.AllocTensor<half>();
    Cast(out, sums, RoundMode::CAST_RINT, TILE / 64);
    qout.EnQue(out);
    out = qout.DeQue<half>();
    DataCopy(yg, out, TILE / 64);
    qout.FreeTensor(out);
    qin.FreeTensor(in);
}
"""


@pytest.mark.parametrize("shift", [0, 8])
def test_reductions_casts_and_unaligned_copies_are_priced_by_class(run_source, rng, model, shift):
    x = rng.standard_normal(TILE + 8, dtype=np.float32)
    y = np.zeros(TILE // 64, dtype=np.float16)
    core = run_source(PRICED, "priced", [x, np.array([shift], dtype=np.int32), y]).cores[0]
    want = x[shift:shift + TILE].reshape(-1, 64).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(y, want.astype(np.float16), rtol=2e-3, atol=2e-3)
    issue = model["vector_issue_cycles"]
    reduce = model["reduce_issue_factor"] * issue + TILE // 64 * model["vector_cycles_per_repeat"]
    cast = issue + model["cast_repeat_factor"] * model["vector_cycles_per_repeat"]  # 64 halves: one repeat
    assert core["busy_v_cycles"] == pytest.approx(reduce + cast, abs=1)
    # One core's read runs at its 32 B/cycle link; 32-byte alignment costs the link one more 512-byte burst.
    span = TILE * 4 + (model["gm_burst_bytes"] if shift else 0)
    assert core["busy_mte2_cycles"] == pytest.approx(model["copy_issue_cycles"] + span / model.soc["ddr_bytes_per_cycle"],
                                                     abs=1)
