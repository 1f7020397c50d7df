# SPDX-License-Identifier: BSD-3-Clause
"""Cores ordered through the API's own GM flags (twin/include/twin/block_sync.h): IBSet / IBWait, and
InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock. What a core did before it sets or
notifies is visible to the core that waited for it; without the wait the GM order check reports the
race, and a wait nobody answers is a rule error where the NPU would hang."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

BLOCK = 64  # float32 elements

# params = [case, wait event, gm workspace ints, ub workspace ints, blockIdx]. Core 0 copies x to
# y's block 0 and IBSets; core 1 IBWaits (case 1: skips it) and copies y's block 0 to block 1.
IB_SOURCE = """
extern "C" __global__ __aicore__ void ib_case(GM_ADDR x, GM_ADDR y, GM_ADDR sync, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 5);
    const int32_t kase = pg.GetValue(0), waitEvent = pg.GetValue(1), blockIdx = pg.GetValue(4);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * BLOCK);
    GlobalTensor<int32_t> syncGm;
    syncGm.SetGlobalBuffer((__gm__ int32_t *)sync, pg.GetValue(2));
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    pipe.InitBuffer(work, 32);
    LocalTensor<int32_t> ub = work.Get<int32_t>(pg.GetValue(3));
    if (GetBlockIdx() == 1 && kase != 1) IBWait(syncGm, ub, blockIdx, waitEvent);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, GetBlockIdx() == 0 ? xg : yg, BLOCK);
    q.EnQue(t);
    t = q.DeQue<float>();
    DataCopy(yg[GetBlockIdx() * BLOCK], t, BLOCK);
    q.FreeTensor(t);
    if (GetBlockIdx() == 0) IBSet(syncGm, ub, blockIdx, 0);
}
""".replace("BLOCK", str(BLOCK))


def launch_ib(x, y, case=0, wait_event=0, gm_ints=64, ub_ints=8, block_idx=0):
    sync = np.zeros(64, np.int32)
    return run(IB_SOURCE, "ib_case", {"x": x, "y": y, "sync": sync,
                                      "params": params(case, wait_event, gm_ints, ub_ints, block_idx)}, block_dim=2)


def test_ib_wait_orders_the_waiter_after_the_setter(rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    launch_ib(x, y)
    np.testing.assert_array_equal(y[BLOCK:], x)


def test_without_ib_wait_the_copy_races(rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=r"core 1: DataCopy: reads GM bytes that core 0 wrote \(DataCopy\) with no "
                                            r"SyncAll in between"):
        launch_ib(x, np.zeros(2 * BLOCK, np.float32), case=1)


@pytest.mark.parametrize("kw, message", [
    ({"wait_event": 1}, r"core 1: IBWait: an IBWait needs an IBSet with the same gmWorkspace, blockIdx and eventID "
                        r"\(every other core returned or waits too; the NPU would hang\)"),
    ({"block_idx": 2}, r"IB(Set|Wait): blockIdx must be in \[0, GetBlockNum\(\) - 1\] \(got 2, block num 2\)"),
    ({"ub_ints": 4}, r"IB(Set|Wait): ubWorkspace must hold at least 32 bytes \(16 bytes\)"),
    ({"gm_ints": 8, "block_idx": 1}, r"IB(Set|Wait): gmWorkspace must hold at least .* \(32 bytes < 64\)"),
])
def test_ib_wait_rules(kw, message, rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=message):
        launch_ib(x, np.zeros(2 * BLOCK, np.float32), **kw)


CORES = 4
ROUNDS = 2

# params = [case]: 0 in turns; 1 without the turn calls; 2 no InitDetermineComputeWorkspace; 3 core 0
# never notifies. Each core, in its turn, sets y = 3 y + (core + 1) + 10 round: the result tells the order.
TURN_SOURCE = """
extern "C" __global__ __aicore__ void turn_case(GM_ADDR y, GM_ADDR work, GM_ADDR p)
{
    GlobalTensor<int32_t> pg, yg, workGm;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 1);
    const int32_t kase = pg.GetValue(0), n = GetBlockNum(), i = GetBlockIdx();
    yg.SetGlobalBuffer((__gm__ int32_t *)y, 1);
    workGm.SetGlobalBuffer((__gm__ int32_t *)work, n * 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, (n + 1) * 32);
    LocalTensor<int32_t> ub = buf.Get<int32_t>();
    if (kase != 1 && kase != 2) InitDetermineComputeWorkspace(workGm, ub);
    for (int32_t round = 0; round < ROUNDS; ++round) {
        if (kase != 1) WaitPreBlock(workGm, ub);
        yg.SetValue(0, 3 * yg.GetValue(0) + i + 1 + 10 * round);
        if (kase != 1 && !(kase == 3 && i == 0)) NotifyNextBlock(workGm, ub);
    }
}
""".replace("ROUNDS", str(ROUNDS))


def launch_turns(case, rng):
    y = np.zeros(1, np.int32)
    work = rng.integers(1, 1000, CORES * 8).astype(np.int32)  # need not be zeroed beforehand
    run(TURN_SOURCE, "turn_case", {"y": y, "work": work, "params": params(case)}, block_dim=CORES)
    return int(y[0])


def test_wait_pre_block_and_notify_next_block_take_turns_in_block_order(rng):
    expected = 0
    for rnd in range(ROUNDS):
        for core in range(CORES):
            expected = 3 * expected + core + 1 + 10 * rnd
    assert launch_turns(0, rng) == expected


@pytest.mark.parametrize("case, message", [
    (1, r"GlobalTensor::(GetValue|SetValue): (reads|writes) GM bytes that core \d wrote \(GlobalTensor::SetValue\) "
        r"with no SyncAll in between"),
    (2, r"core \d: WaitPreBlock: InitDetermineComputeWorkspace must come first"),
    (3, r"core [123]: WaitPreBlock: every WaitPreBlock needs the NotifyNextBlock of the core before it in the same round "
        r"\(every other core returned or waits too; the NPU would hang\)"),
])
def test_turns_broken(case, message, rng):
    with pytest.raises(TwinRuleError, match=message):
        launch_turns(case, rng)


def test_ib_wait_is_priced_from_the_cycle_the_flag_was_written(rng):
    # Both cores do the same work around the flag, but core 1's starts only once it saw core 0's IBSet:
    # a scalar GM round trip after the flag write, itself after core 0's copies.
    from ascendc_twin.model import load_model

    x = rng.standard_normal(BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    setter, waiter = launch_ib(x, y).cores
    np.testing.assert_array_equal(y[BLOCK:], x)
    model = load_model()
    assert waiter["model_cycles"] > setter["model_cycles"] + model["scalar_gm_cycles"]


# Each core, in its turn, adds its tile of x into y's tile of the round with an atomic DataCopy (the
# pattern of the asc-devkit sample sequential_block_sync): copies through L2 between the waits, so
# the cores' L2 accesses and their flag polls meet in the timeline's arbiter. params = [core that
# never notifies (-1: none)].
ATOMIC_TURN_SOURCE = """
extern "C" __global__ __aicore__ void atomic_turns(GM_ADDR x, GM_ADDR y, GM_ADDR work, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 1);
    const int32_t silent = pg.GetValue(0), n = GetBlockNum(), i = GetBlockIdx();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x + i * ROUNDS * BLOCK, ROUNDS * BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, ROUNDS * BLOCK);
    GlobalTensor<int32_t> workGm;
    workGm.SetGlobalBuffer((__gm__ int32_t *)work, n * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> flags, tiles;
    pipe.InitBuffer(flags, 1, (n + 1) * 32);
    pipe.InitBuffer(tiles, 1, BLOCK * sizeof(float));
    LocalTensor<int32_t> ub = flags.AllocTensor<int32_t>();
    InitDetermineComputeWorkspace(workGm, ub);
    for (int32_t round = 0; round < ROUNDS; ++round) {
        LocalTensor<float> t = tiles.AllocTensor<float>();
        DataCopy(t, xg[round * BLOCK], BLOCK);
        WaitPreBlock(workGm, ub);
        SetAtomicAdd<float>();
        DataCopy(yg[round * BLOCK], t, BLOCK);
        DisableDmaAtomic();
        if (i != silent) NotifyNextBlock(workGm, ub);
        else PipeBarrier<PIPE_ALL>();  // the barrier NotifyNextBlock would have made
        tiles.FreeTensor(t);
    }
    flags.FreeTensor(ub);
}
""".replace("ROUNDS", str(ROUNDS)).replace("BLOCK", str(BLOCK))


def launch_atomic_turns(x, silent=-1):
    """y, the work flags and the launch of ATOMIC_TURN_SOURCE over x (cores x ROUNDS x BLOCK floats); the
    timeout turns a wait that never ends into a failure."""
    cores = x.shape[0]
    y = np.zeros((ROUNDS, BLOCK), np.float32)
    args = {"x": x, "y": y, "work": np.zeros(cores * 8, np.int32), "params": params(silent)}
    return y, run(ATOMIC_TURN_SOURCE, "atomic_turns", args, block_dim=cores, timeout=120)


@pytest.mark.parametrize("cores", [2, 8])
def test_atomic_copies_take_turns_in_block_order(cores, rng):
    # A core whose poll failed lets the others' copies go on until the next flag write. Core 0's
    # second turn follows the last core's first: `cores` hand-offs of a scalar GM round trip at least.
    from ascendc_twin.model import load_model

    x = rng.standard_normal((cores, ROUNDS, BLOCK)).astype(np.float32)
    y, result = launch_atomic_turns(x)
    expected = np.zeros((ROUNDS, BLOCK), np.float32)
    for core in range(cores):
        expected += x[core]
    np.testing.assert_array_equal(y, expected)
    assert result.cores[0]["model_cycles"] > cores * load_model()["scalar_gm_cycles"]


def test_atomic_turns_give_the_same_cycles_every_run(rng):
    x = rng.standard_normal((8, ROUNDS, BLOCK)).astype(np.float32)
    runs = {tuple(core["model_cycles"] for core in launch_atomic_turns(x)[1].cores) for _ in range(3)}
    assert len(runs) == 1


def test_atomic_turns_without_a_notify_are_reported(rng):
    x = rng.standard_normal((8, ROUNDS, BLOCK)).astype(np.float32)
    with pytest.raises(TwinRuleError, match=r"core \d: WaitPreBlock: every WaitPreBlock needs the NotifyNextBlock of "
                                            r"the core before it in the same round \(every other core returned or "
                                            r"waits too; the NPU would hang\)"):
        launch_atomic_turns(x, silent=int(rng.integers(0, 8)))
