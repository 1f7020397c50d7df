# SPDX-License-Identifier: BSD-3-Clause
"""What CANN's own kernel sources write, compiled unchanged by the twin: `if ASCEND_IS_AIV {` and
g_coreType, AscendC::GetUserWorkspace as a function, the DataCopyPad(gm, ub, DataCopyParams)
overload (the UB -> GM copy with 16-bit fields: blockLen in bytes, the UB stride in 32-byte blocks,
the GM stride in bytes), GetAccVal, AscendCUtils::SetMask, the API constants, InitOutput through
CANN's stack buffer, TPipe buffers over the whole UB, and ascendc_assert."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from ascendc_twin.model import soc_info
from small_kernels import run

# Each core copies its 8 floats of x to out through UB, on the vector-core branch only; the AIC
# branch (never taken on a vector core) would write -1.
CORE_TYPE = r"""
extern "C" __global__ __aicore__ void core_type(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> src, dst;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x) + 8 * GetBlockIdx(), 8);
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out) + 8 * GetBlockIdx(), 8);
    if ASCEND_IS_AIC {
        Duplicate(t, -1.0f, 8);
    }
    if ASCEND_IS_AIV {
        DataCopy(t, src, 8);
    }
    if (g_coreType == AIV && !ASCEND_IS_NOT_AIV) {
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(dst, t, 8);
    }
}
"""


def test_ascend_is_aiv_is_a_condition_and_every_core_is_aiv(rng):
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(CORE_TYPE, "core_type", [x, out], block_dim=2)
    np.testing.assert_array_equal(out, x)


# The user part of the workspace, reached through the qualified name as ops-nn's kernels call it.
QUALIFIED_WORKSPACE = r"""
extern "C" __global__ __aicore__ void qualified_ws(GM_ADDR workspace, GM_ADDR value)
{
    GlobalTensor<float> ws, v;
    ws.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(AscendC::GetUserWorkspace(workspace)), 1);
    v.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(value), 1);
    ws.SetValue(0, v.GetValue(0));
}
"""


def test_get_user_workspace_is_a_function_in_ascendc(rng):
    sys_bytes = soc_info("Ascend910B2")["sys_workspace_bytes"]
    workspace = np.zeros(sys_bytes + 32, np.uint8)
    value = rng.standard_normal(1).astype(np.float32)
    run(QUALIFIED_WORKSPACE, "qualified_ws", [workspace, value])
    assert workspace[sys_bytes:sys_bytes + 4].view(np.float32)[0] == value[0]


# Three blocks of 5 floats (20 bytes) from UB rows 2 blocks apart (one 32-byte block of gap after
# each rounded-up row) to GM with 12 bytes between the blocks, through DataCopyParams.
PAD_PARAMS = r"""
extern "C" __global__ __aicore__ void pad_params(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 6 * 32);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> src, dst;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x), 48);
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), 24);
    DataCopy(t, src, 48);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopyParams params(3, 20, 1, 12);
    DataCopyPad(dst, t, params);
}
"""


def test_data_copy_pad_to_gm_takes_data_copy_params(rng):
    x = rng.standard_normal(48).astype(np.float32)
    out = np.full(24, np.nan, np.float32)
    run(PAD_PARAMS, "pad_params", [x, out])
    expect = np.full(24, np.nan, np.float32)
    for block in range(3):
        expect[8 * block:8 * block + 5] = x[16 * block:16 * block + 5]
    np.testing.assert_array_equal(out, expect)


# GetAccVal after the count form of ReduceSum, AscendCUtils::SetMask<float>(len) before a repeat form
# that keeps the mask (isSetMask = false), the API constants and DataCacheCleanAndInvalid.
# params: [len, read GetAccVal before any ReduceSum]. out: [sum bits, the 64 Muls lanes, 8 constants].
REGISTERS = r"""
extern "C" __global__ __aicore__ void registers(GM_ADDR x, GM_ADDR prm, GM_ADDR out)
{
    GlobalTensor<float> xg, lanes;
    GlobalTensor<int32_t> pg, og;
    xg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x), 64);
    lanes.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out) + 8, 64);
    pg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(prm), 2);
    og.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out), 80);
    const int32_t len = pg.GetValue(0);
    if (pg.GetValue(1) != 0) {
        og.SetValue(0, int32_t(GetAccVal()));
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * 256);
    LocalTensor<float> t = buf.Get<float>();
    LocalTensor<float> work = t[64];
    LocalTensor<float> sum = t[128];
    DataCopy(t, xg, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    ReduceSum(sum, t, work, 64);
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
    const int64_t acc = GetAccVal();
    AscendCUtils::SetMask<float>(len);
    Muls<float, false>(t, t, 2.0f, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
    ResetMask();
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(lanes, t, 64);
    SetFlag<HardEvent::MTE3_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
    og.SetValue(0, int32_t(uint32_t(acc)));
    const int32_t constants[8] = {ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MAX_REPEAT_TIMES, DEFAULT_REPEAT_STRIDE,
                                  DEFAULT_BLK_NUM, HALF_DEFAULT_REPEAT_STRIDE, AscendCUtils::GetC0Count(2), AIV};
    for (int32_t i = 0; i < 8; ++i) {
        og.SetValue(72 + i, constants[i]);
    }
    DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE>(og);
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE>(og[72]);
}
"""


def test_acc_val_set_mask_constants(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(80, np.int32)
    length = int(rng.integers(1, 64))
    run(REGISTERS, "registers", [x, np.array([length, 0], np.int32), out])
    assert abs(out[:1].view(np.float32)[0] - np.float64(x).sum()) <= 1e-5 * np.abs(x).sum()
    lanes = out[8:72].view(np.float32)
    np.testing.assert_array_equal(lanes, np.where(np.arange(64) < length, x * np.float32(2), x))
    np.testing.assert_array_equal(out[72:], [32, 256, 255, 8, 8, 4, 16, 2])


def test_acc_val_before_any_reduce_sum_is_refused(rng):
    with pytest.raises(TwinRuleError, match="GetAccVal: reads the result of the count form of ReduceSum"):
        run(REGISTERS, "registers", [np.zeros(64, np.float32), np.array([8, 1], np.int32), np.zeros(80, np.int32)])


# TPipe buffers of `used` bytes (CANN's small-D rms_norm_grad plans 195,584), then InitOutput of n
# floats with a value through the stack buffer left past them (up to the UB less 64 bytes).
INIT_OUTPUT = r"""
extern "C" __global__ __aicore__ void init_output(GM_ADDR y, GM_ADDR prm)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(prm), 3);
    const int32_t used = pg.GetValue(0), n = pg.GetValue(1);
    const float value = float(pg.GetValue(2)) / 8.0f;
    GlobalTensor<float> yg;
    yg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y), n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, used);
    InitOutput<float>(yg, n, value);
    InitOutput<float>(yg, n, value);
}
"""


@pytest.mark.parametrize("used", [195584, 1024])
def test_init_output_fills_gm_through_the_stack_buffer(rng, used):
    n = int(rng.integers(600, 3000))
    code = int(rng.integers(-800, 800))
    y = np.full(n, np.nan, np.float32)
    stats = run(INIT_OUTPUT, "init_output", [y, np.array([used, n, code], np.int32)])
    np.testing.assert_array_equal(y, np.float32(code / 8))
    stack = min(196608 - 64 - used, 255 * 32)
    assert stats.total["ub_peak_bytes"] == used + stack


def test_init_output_needs_ub_past_the_tpipe_buffers():
    with pytest.raises(TwinRuleError, match="InitOutput: no UB is left for the stack buffer past the TPipe"):
        run(INIT_OUTPUT, "init_output", [np.zeros(64, np.float32), np.array([196576, 64, 8], np.int32)])


def test_tpipe_buffers_may_fill_the_whole_ub():
    # asc-devkit's CPU-debug TPipe allows 192 KiB on dav-2201; nothing on the NPU keeps part of it back.
    body = r"""
extern "C" __global__ __aicore__ void whole_ub(GM_ADDR y)
{
    GlobalTensor<float> yg;
    yg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y), 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 196608);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t[49144], 1.5f, 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, t[49144], 8);
}
"""
    y = np.zeros(8, np.float32)
    run(body, "whole_ub", [y])
    np.testing.assert_array_equal(y, 1.5)


ASSERTS = r"""
extern "C" __global__ __aicore__ void asserts(GM_ADDR prm)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(prm), 1);
    const int32_t tiles = pg.GetValue(0);
    ascendc_assert(tiles != 0 && "tile num can not be zero!");
    ascendc_assert(tiles % 2 == 0, "tiles %d must be even\n", tiles);
}
"""


def test_ascendc_assert_fails_the_launch_with_its_message():
    run(ASSERTS, "asserts", [np.array([4], np.int32)])
    with pytest.raises(TwinRuleError, match=r"ascendc_assert: the assertion \(tiles % 2 == 0\) failed: tiles 3 must "
                                            "be even"):
        run(ASSERTS, "asserts", [np.array([3], np.int32)])
    with pytest.raises(TwinRuleError, match="tile num can not be zero"):
        run(ASSERTS, "asserts", [np.array([0], np.int32)])
