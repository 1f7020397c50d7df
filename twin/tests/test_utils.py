# SPDX-License-Identifier: BSD-3-Clause
"""Kernel utilities of the twin (twin/include/twin/utils.h): SetPadValue's effect on DataCopyPad,
the data-cache-bypassing scalar GM accesses, DivCeil and printf."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import run

# 5 floats copied with 3 elements of right padding (isPad false): the padding takes SetPadValue's
# value when SET is "SetPadValue(7.5f)", and is random (poison: copying it out fails) otherwise.
PAD = r"""
extern "C" __global__ __vector__ void pad(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECIN> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x), 5);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), 8);
    SET;
    DataCopyExtParams params{1, 5 * sizeof(float), 0, 0, 0};
    DataCopyPadExtParams<float> padParams{false, 0, 3, 0.0f};
    DataCopyPad(t, gx, params, padParams);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(go, t, 8);
}
"""


def test_set_pad_value_fills_padding(rng):
    x = rng.standard_normal(5).astype(np.float32)
    out = np.zeros(8, np.float32)
    run(PAD.replace("SET", "SetPadValue(7.5f)"), "pad", [x, out])
    np.testing.assert_array_equal(out, np.concatenate([x, [7.5, 7.5, 7.5]]).astype(np.float32))


def test_padding_without_set_pad_value_is_random(rng):
    x = rng.standard_normal(5).astype(np.float32)
    with pytest.raises(TwinRuleError, match="nothing wrote|undefined|never written"):
        run(PAD.replace("SET", "(void)0"), "pad", [x, np.zeros(8, np.float32)])


BYPASS = r"""
extern "C" __global__ __vector__ void bypass(GM_ADDR buf)
{
    __gm__ int32_t *p = reinterpret_cast<__gm__ int32_t *>(buf);
    const int32_t v = ReadGmByPassDCache(p + INDEX);
    WriteGmByPassDCache(p + 3, int32_t(DivCeil(v, 4)));
    AscendC::printf("bypass read %d\n", v);
}
"""


def test_gm_bypass_dcache_scalar_access(rng, capfd):
    buf = np.zeros(4, np.int32)
    buf[1] = int(rng.integers(1, 1000))
    run(BYPASS.replace("INDEX", "1"), "bypass", [buf])
    assert buf[3] == -(-buf[1] // 4)
    assert f"bypass read {buf[1]}" in capfd.readouterr().out


def test_gm_bypass_dcache_stays_inside_the_buffer():
    with pytest.raises(TwinRuleError, match="ReadGmByPassDCache: the GM access must stay inside a buffer"):
        run(BYPASS.replace("INDEX", "4"), "bypass", [np.zeros(4, np.int32)])
