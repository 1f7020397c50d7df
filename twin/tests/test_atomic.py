# SPDX-License-Identifier: BSD-3-Clause
"""The atomic modes of copies to GM (twin/include/twin/data_copy.h): under SetAtomicAdd, SetAtomicMax or
SetAtomicMin each element copied to GM is combined with what GM holds. Cores may combine into the same
bytes in one SyncAll interval when they use the same operation (every order gives the same result);
mixing operations there is a race (the result depends on the order)."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

BLOCK = 64  # elements per core
CORES = 3

# params = [op of even cores, op of odd cores, copy as int16 (wrong type)]: 0 add, 1 max, 2 min.
# Every core combines its block of x into y.
SOURCE = """
void SetMode(int32_t op)
{
    if (op == 0) SetAtomicAdd<T>();
    if (op == 1) SetAtomicMax<T>();
    if (op == 2) SetAtomicMin<T>();
}

extern "C" __global__ __aicore__ void atomic_NAME(GM_ADDR x, GM_ADDR y, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 3);
    const int32_t i = GetBlockIdx(), op = pg.GetValue(i % 2), wrongType = pg.GetValue(2);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T *)x, GetBlockNum() * BLOCK);
    yg.SetGlobalBuffer((__gm__ T *)y, BLOCK);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, BLOCK * sizeof(T));
    LocalTensor<T> t = q.AllocTensor<T>();
    DataCopy(t, xg[i * BLOCK], BLOCK);
    q.EnQue(t);
    t = q.DeQue<T>();
    SetMode(op);
    if (wrongType) {
        GlobalTensor<int16_t> wrong;
        wrong.SetGlobalBuffer((__gm__ int16_t *)y, BLOCK);
        DataCopy(wrong, t.template ReinterpretCast<int16_t>(), BLOCK);
    } else {
        DataCopy(yg, t, BLOCK);
    }
    DisableDmaAtomic();
    q.FreeTensor(t);
}
"""
TYPES = {"half": np.float16, "int32_t": np.int32}
# What launch() declares ahead of SOURCE, with sample values, for tests/conformance.
KERNEL_TEXT_HEADS = {"SOURCE": f"using T = int32_t;\nconstexpr uint32_t BLOCK = {BLOCK};\n"}
COMBINE = {0: lambda a: a.sum(axis=0), 1: lambda a: a.max(axis=0), 2: lambda a: a.min(axis=0)}


def launch(ctype, x, y, even_op, odd_op, wrong_type=0):
    text = f"using T = {ctype};\nconstexpr uint32_t BLOCK = {BLOCK};\n" + SOURCE.replace("NAME", ctype.replace("_t", ""))
    return run(text, "atomic_" + ctype.replace("_t", ""), {"x": x, "y": y, "params": params(even_op, odd_op, wrong_type)},
               block_dim=CORES)


def inputs(ctype, rng):
    if TYPES[ctype] == np.int32:
        return rng.integers(-1000, 1000, (CORES + 1) * BLOCK).astype(np.int32)
    return rng.uniform(-4, 4, (CORES + 1) * BLOCK).astype(np.float16)


@pytest.mark.parametrize("op", [1, 2], ids=["SetAtomicMax", "SetAtomicMin"])
@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_atomic_max_and_min_combine_every_core_with_what_gm_held(ctype, op, rng):
    data = inputs(ctype, rng)
    x, y = data[:CORES * BLOCK], data[CORES * BLOCK:].copy()
    expected = COMBINE[op](np.vstack([x.reshape(CORES, BLOCK), y[None]]))
    launch(ctype, x, y, op, op)
    np.testing.assert_array_equal(y, expected)


def test_atomic_add_of_int32_wraps_like_the_hardware(rng):
    x = np.full(CORES * BLOCK, 2**30, np.int32)
    y = rng.integers(0, 100, BLOCK).astype(np.int32)
    expected = (y.astype(np.int64) + CORES * 2**30 + 2**31) % 2**32 - 2**31
    launch("int32_t", x, y, 0, 0)
    np.testing.assert_array_equal(y, expected.astype(np.int32))


def test_different_atomic_operations_on_the_same_bytes_race(rng):
    data = inputs("half", rng)
    with pytest.raises(TwinRuleError, match=r"DataCopy: atomically takes the (max|min) into GM bytes that core \d "
                                            r"atomically took the (max|min) into \(DataCopy\) with no SyncAll in between"):
        launch("half", data[:CORES * BLOCK], data[CORES * BLOCK:].copy(), 1, 2)


def test_the_copied_type_must_be_the_atomic_type(rng):
    data = inputs("half", rng)
    with pytest.raises(TwinRuleError, match=r"DataCopy: with SetAtomicMax on, the copied type must be the SetAtomicMax "
                                            r"type \(copies int16_t, SetAtomicMax<half>\)"):
        launch("half", data[:CORES * BLOCK], data[CORES * BLOCK:].copy(), 1, 1, wrong_type=1)
