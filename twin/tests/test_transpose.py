# SPDX-License-Identifier: BSD-3-Clause
"""Transpose (16 x 16 and TransposeParamsExt) and TransDataTo5HD (twin/include/twin/transpose.h) against
NumPy, then their rules."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, random_array, run

# x (N x C x H x W halves, or 16 x 16) -> UB -> one call chosen by p[0] -> out. p = mode, n, c, h, w, tmp.
TRANSPOSE = r"""
extern "C" __global__ __vector__ void tr(GM_ADDR x, GM_ADDR out, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 6);
    const int32_t mode = pg.GetValue(0), tmp = pg.GetValue(5);
    const uint16_t n = pg.GetValue(1), c = pg.GetValue(2), h = pg.GetValue(3), w = pg.GetValue(4);
    const uint32_t total = uint32_t(n) * c * h * w;
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half *)x, total);
    og.SetGlobalBuffer((__gm__ half *)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, bt;
    pipe.InitBuffer(bs, total * sizeof(half));
    pipe.InitBuffer(bd, total * sizeof(half));
    pipe.InitBuffer(bt, tmp);
    LocalTensor<half> src = bs.Get<half>(), dst = bd.Get<half>();
    DataCopy(src, xg, total);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (mode == 0) {
        Transpose(dst, src);
    } else if (mode == 1 || mode == 2) {
        const TransposeType type = mode == 1 ? TransposeType::TRANSPOSE_NCHW2NHWC : TransposeType::TRANSPOSE_NHWC2NCHW;
        Transpose(dst, src, bt.Get<uint8_t>(), TransposeParamsExt(n, c, h, w, type));
    } else {
        // NCHW -> NC1HWC0 with C0 = 16, one call per (n, c1), H x W / 16 repeats: the documented 5HD use.
        const uint32_t image = uint32_t(h) * w;
        for (uint32_t j = 0; j < uint32_t(n) * c / 16; ++j) {
            uint64_t d[16], s[16];
            for (uint32_t i = 0; i < 16; ++i) {
                d[i] = (uint64_t)dst[j * 16 * image + 16 * i].GetPhyAddr();
                s[i] = (uint64_t)src[j * 16 * image + image * i].GetPhyAddr();
            }
            TransDataTo5HD<half>(d, s, TransDataTo5HDParams(false, false, image / 16, 16, 1));
        }
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, total);
}
"""


def launch(rng, mode, shape, tmp=32):
    x = random_array(rng, int(np.prod(shape)), np.float16)
    out = np.zeros_like(x)
    n, c, h, w = shape
    run(TRANSPOSE, "tr", [x, out, params(mode, n, c, h, w, tmp)])
    return x.reshape(shape), out


def test_transpose_16x16(rng):
    x, out = launch(rng, 0, (1, 1, 16, 16))
    np.testing.assert_array_equal(out.reshape(16, 16), x[0, 0].T)


@pytest.mark.parametrize("shape", [(3, 3, 2, 8), (2, 5, 4, 4)])
def test_transpose_nchw_to_nhwc(rng, shape):
    tmp = (shape[1] + 2) * 16 * 16 * 2
    x, out = launch(rng, 1, shape, tmp)
    np.testing.assert_array_equal(out.reshape(shape[0], -1), np.transpose(x, (0, 2, 3, 1)).reshape(shape[0], -1))


def test_transpose_nhwc_to_nchw(rng):
    n, c, h, w = 2, 3, 4, 4
    tmp = (2 * c + 1) * 16 * 16 * 2
    x, out = launch(rng, 2, (n, c, h, w), tmp)  # x read as [N, H, W, C]
    nhwc = x.reshape(n, h, w, c)
    np.testing.assert_array_equal(out.reshape(n, c, h, w), np.transpose(nhwc, (0, 3, 1, 2)))


def test_trans_data_to_5hd(rng):
    n, c, h, w = 1, 32, 4, 16
    x, out = launch(rng, 3, (n, c, h, w))
    expected = x.reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(out.reshape(expected.shape), expected)


@pytest.mark.parametrize("mode,shape,tmp,rule", [
    (1, (3, 3, 2, 8), 2048, "sharedTmpBuffer must hold 2560 bytes"),
    (1, (1, 16, 3, 3), 9216, "hSize x wSize x sizeof\\(T\\) must be a multiple of 32 bytes"),
    (0, (1, 1, 8, 16), 32, "the copy must stay inside the UB source tensor"),
])
def test_transpose_rules(rng, mode, shape, tmp, rule):
    with pytest.raises(TwinRuleError, match=rule):
        launch(rng, mode, shape, tmp)
