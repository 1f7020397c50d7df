"""What CANN's own kernel sources write, compiled unchanged by the twin: `if ASCEND_IS_AIV {` and
g_coreType, AscendC::GetUserWorkspace as a function, and the DataCopyPad(gm, ub, DataCopyParams)
overload (the UB -> GM copy with 16-bit fields: blockLen in bytes, the UB stride in 32-byte blocks,
the GM stride in bytes)."""
import numpy as np

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
