# SPDX-License-Identifier: BSD-3-Clause
"""The cross-core order of GM accesses (twin/include/twin/gm_order.h): the cores run unordered, so a GM
byte one core writes may be read or written by another core only after a SyncAll, or after a flag the
writer sets with WriteGmByPassDCache behind a DataSyncBarrier and the reader sees with
ReadGmByPassDCache. Each broken kernel fails with the rule; the same kernel ordered passes and computes.
Overlapping writes of identical bytes are no race; of differing bytes they are."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

BLOCK = 64  # float32 elements per core
CORES = 4

# params = [case, synced]. x: CORES blocks in; y: 2 x CORES blocks out.
SOURCE = """
using Through = TQueBind<TPosition::VECIN, TPosition::VECOUT, 1>;

void Move(Through &q, const GlobalTensor<float> &dst, const GlobalTensor<float> &src, bool atomic = false)
{
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, src, BLOCK);
    q.EnQue(t);
    t = q.DeQue<float>();
    if (atomic) SetAtomicAdd<float>();
    DataCopy(dst, t, BLOCK);
    if (atomic) SetAtomicNone();
    q.FreeTensor(t);
}

extern "C" __global__ __aicore__ void gm_order_case(GM_ADDR x, GM_ADDR y, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 2);
    const int32_t kase = pg.GetValue(0);
    const bool synced = pg.GetValue(1) != 0;
    const int32_t cores = GetBlockNum(), i = GetBlockIdx(), right = (i + 1) % cores;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, cores * BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * cores * BLOCK);
    TPipe pipe;
    Through q;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    if (kase == 0) {  // publish my block, take my right neighbour's
        Move(q, yg[i * BLOCK], xg[i * BLOCK]);
        if (synced) SyncAll();
        Move(q, yg[(cores + i) * BLOCK], yg[right * BLOCK]);
    } else if (kase == 1) {  // every core writes block 0 (synced: each its own block)
        Move(q, yg[(synced ? i : 0) * BLOCK], xg[i * BLOCK]);
    } else if (kase == 2) {  // every core adds its block into block 0; core 0 then copies the sum
        Move(q, yg, xg[i * BLOCK], true);
        if (synced) SyncAll();
        if (i == 0) Move(q, yg[cores * BLOCK], yg);
    } else if (kase == 3) {  // core 1 stores a scalar that core 0 loads
        if (i == 1) yg.SetValue(0, 1.0f);
        if (synced) SyncAll();
        if (i == 0) yg.SetValue(cores * BLOCK, yg.GetValue(0) + 1.0f);
    } else {  // every core writes x's block 0 to y's block 0 (synced: its own x block), then one scalar
        Move(q, yg, xg[(synced ? i : 0) * BLOCK]);
        yg.SetValue(cores * BLOCK, xg.GetValue(synced ? i : 0));
    }
}
""".replace("BLOCK", str(BLOCK))

BROKEN = {
    0: r"core \d: DataCopy: reads GM bytes that core \d wrote \(DataCopy\) with no SyncAll in between; .*of 'y'",
    1: r"core \d: DataCopy: writes GM bytes that core \d wrote \(DataCopy\) with no SyncAll in between",
    2: r"core 0: DataCopy: reads GM bytes that core \d atomically added to \(DataCopy\) with no SyncAll in between",
    3: r"core 0: GlobalTensor::GetValue: reads GM bytes that core 1 wrote \(GlobalTensor::SetValue\)",
}


def launch(case: int, synced: bool, x: np.ndarray, y: np.ndarray):
    return run(SOURCE, "gm_order_case", {"x": x, "y": y, "params": params(case, int(synced))}, block_dim=CORES)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_unsynchronised_cross_core_gm_access_is_a_rule_error(case, rng):
    x = rng.standard_normal(CORES * BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=BROKEN[case]):
        launch(case, False, x, np.zeros(2 * CORES * BLOCK, np.float32))


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_same_access_after_a_sync_all_passes(case, rng):
    x = rng.standard_normal(CORES * BLOCK).astype(np.float32)
    y = np.zeros(2 * CORES * BLOCK, np.float32)
    launch(case, True, x, y)
    blocks = x.reshape(CORES, BLOCK)
    if case == 0:
        np.testing.assert_array_equal(y[CORES * BLOCK:].reshape(CORES, BLOCK), np.roll(blocks, -1, axis=0))
    elif case == 1:
        np.testing.assert_array_equal(y[:CORES * BLOCK].reshape(CORES, BLOCK), blocks)
    elif case == 2:  # the atomic order is open, so the sum is compared with a tolerance
        np.testing.assert_allclose(y[CORES * BLOCK:(CORES + 1) * BLOCK], blocks.sum(axis=0), rtol=1e-5, atol=1e-6)
    else:
        assert y[CORES * BLOCK] == 2.0


def test_atomic_adds_of_several_cores_may_overlap(rng):
    x = rng.standard_normal(CORES * BLOCK).astype(np.float32)
    y = np.zeros(2 * CORES * BLOCK, np.float32)
    launch(2, True, x, y)  # all cores add into block 0 in one SyncAll interval: no rule error
    np.testing.assert_allclose(y[:BLOCK], x.reshape(CORES, BLOCK).sum(axis=0), rtol=1e-5, atol=1e-6)


def test_overlapping_writes_of_identical_bytes_are_no_race(rng):
    x = rng.standard_normal(CORES * BLOCK).astype(np.float32)
    y = np.zeros(2 * CORES * BLOCK, np.float32)
    launch(4, False, x, y)
    np.testing.assert_array_equal(y[:BLOCK], x[:BLOCK])
    assert y[CORES * BLOCK] == x[0]


def test_overlapping_writes_of_differing_bytes_are_a_race(rng):
    x = rng.standard_normal(CORES * BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=r"writes GM bytes that core \d wrote \(DataCopy\) with no SyncAll in "
                                            r"between; .*the two writes' bytes differ"):
        launch(4, True, x, np.zeros(2 * CORES * BLOCK, np.float32))


# Core 0 publishes a block through a flag, core 1 waits for the flag and copies the block on.
# params = [case]; flags: int32, [0] the flag core 0 sets, [8] one the host set beforehand.
FLAG_SOURCE = """
extern "C" __global__ __aicore__ void gm_flag_case(GM_ADDR x, GM_ADDR y, GM_ADDR flags, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 1);
    const int32_t kase = pg.GetValue(0);
    __gm__ int32_t *flag = (__gm__ int32_t *)flags;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, BLOCK);
    yg.SetGlobalBuffer((__gm__ float *)y, 2 * BLOCK);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    if (GetBlockIdx() == 0) {
        if (kase == 4) DataSyncBarrier<MemDsbT::DDR>();
        DataCopy(t, xg, BLOCK);
        q.EnQue(t);
        t = q.DeQue<float>();
        DataCopy(yg, t, BLOCK);
        if (kase == 0 || kase == 5) DataSyncBarrier<MemDsbT::DDR>();
        if (kase == 1) DataSyncBarrier<MemDsbT::ALL>();
        if (kase == 3) DataSyncBarrier<MemDsbT::UB>();
        WriteGmByPassDCache(flag, 1);
    } else {
        while (ReadGmByPassDCache(flag + (kase == 5 ? 8 : 0)) != 1) {
        }
        DataCopy(t, yg, BLOCK);
        q.EnQue(t);
        t = q.DeQue<float>();
        DataCopy(yg[BLOCK], t, BLOCK);
    }
    q.FreeTensor(t);
}
""".replace("BLOCK", str(BLOCK))

FLAG_RACE = r"core 1: DataCopy: reads GM bytes that core 0 wrote \(DataCopy\) with no SyncAll in between; .*flag"


def launch_flag(case: int, x: np.ndarray, y: np.ndarray):
    flags = np.zeros(16, np.int32)
    flags[8] = 1
    return run(FLAG_SOURCE, "gm_flag_case", {"x": x, "y": y, "flags": flags, "params": params(case)}, block_dim=2)


@pytest.mark.parametrize("case", [0, 1], ids=["DataSyncBarrier<DDR>", "DataSyncBarrier<ALL>"])
def test_a_flag_set_after_data_sync_barrier_orders_the_reader_after_the_writer(case, rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    y = np.zeros(2 * BLOCK, np.float32)
    launch_flag(case, x, y)
    np.testing.assert_array_equal(y[BLOCK:], x)


@pytest.mark.parametrize("case", [2, 3, 4, 5], ids=["no barrier", "DataSyncBarrier<UB>", "data after the barrier",
                                                    "the reader saw another flag"])
def test_a_flag_without_release_or_acquire_leaves_the_race(case, rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    with pytest.raises(TwinRuleError, match=FLAG_RACE):
        launch_flag(case, x, np.zeros(2 * BLOCK, np.float32))
