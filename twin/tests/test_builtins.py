# SPDX-License-Identifier: BSD-3-Clause
"""The compiler's built-ins on the twin (twin/include/twin/builtins.h): the __vector__ / __cube__
kernel types, __NPU_ARCH__, the pipe and event names at global scope, the block_idx / block_num
variables and InitSocState."""
import numpy as np
import pytest

from ascendc_twin.errors import InvalidInputError
from small_kernels import run

# Each core writes (block_idx, block_num, __NPU_ARCH__, its GetBlockIdx()) to its own 32-byte slot,
# ordering its pipes with the global names PIPE_ALL / EVENT_ID0 as CANN's samples write them.
BUILTINS = r"""
extern "C" __global__ __vector__ void builtins(GM_ADDR out)
{
    InitSocState();
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    Duplicate(t, int32_t(-1), 8);
    PipeBarrier<PIPE_V>();
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
    t.SetValue(0, int32_t(block_idx));
    t.SetValue(1, int32_t(block_num));
    t.SetValue(2, int32_t(__NPU_ARCH__));
    t.SetValue(3, int32_t(GetBlockIdx()));
    SetFlag<HardEvent::S_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID1);
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out) + 8 * block_idx, 8);
    DataCopy(g, t, 8);
    PipeBarrier<PIPE_ALL>();
}
"""


@pytest.mark.parametrize("blocks", [1, 5])
def test_block_idx_block_num_and_npu_arch(blocks):
    out = np.zeros(8 * blocks, dtype=np.int32)
    run(BUILTINS, "builtins", [out], block_dim=blocks)
    rows = out.reshape(blocks, 8)
    np.testing.assert_array_equal(rows[:, 0], np.arange(blocks))
    np.testing.assert_array_equal(rows[:, 1], blocks)
    np.testing.assert_array_equal(rows[:, 2], 2201)
    np.testing.assert_array_equal(rows[:, 3], np.arange(blocks))
    np.testing.assert_array_equal(rows[:, 4:], -1)


def test_cube_kernel_launch_is_refused():
    body = 'extern "C" __global__ __cube__ void cube_kernel(GM_ADDR out) { (void)out; }\n'
    with pytest.raises(InvalidInputError, match="declared __cube__: the twin emulates AI vector cores only"):
        run(body, "cube_kernel", [np.zeros(8, dtype=np.float32)])


# InitSocState puts the mask back to Normal mode with every lane on: after it, the count form of
# Duplicate writes exactly `n` lanes although the kernel left Counter mode and a 3-lane mask set.
INIT_SOC = r"""
extern "C" __global__ __vector__ void init_soc(GM_ADDR out, GM_ADDR prm)
{
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(prm), 1);
    const int32_t n = p.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256 * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 0.0f, 256);
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 3);
    InitSocState();
    Duplicate<float, false>(t, 2.0f, MASK_PLACEHOLDER, 2, 1, 8);
    Duplicate(t[128], 1.0f, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), 256);
    DataCopy(g, t, 256);
}
"""


def test_init_soc_state_restores_normal_mode_and_full_mask(rng):
    n = int(rng.integers(1, 129))
    out = np.full(256, np.nan, dtype=np.float32)
    run(INIT_SOC, "init_soc", [out, np.array([n], dtype=np.int32)])
    expected = np.zeros(256, dtype=np.float32)
    expected[:128] = 2.0  # two full repeats of 64 lanes under the restored all-ones mask
    expected[128:128 + n] = 1.0
    np.testing.assert_array_equal(out, expected)
