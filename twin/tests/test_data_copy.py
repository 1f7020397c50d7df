# SPDX-License-Identifier: BSD-3-Clause
"""DataCopy (count and DataCopyParams forms), DataCopyPad both ways and SetAtomicAdd against NumPy."""
import ml_dtypes
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import CTYPES, params, random_array, run

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32]
DTYPES = [np.dtype(t) for t in CTYPES]  # the kernel's dtype codes: indices into this list

# GM -> UB -> UB -> GM with the count form, one tile of TILE elements per step, on every core.
CountCopy = """
template <typename T>
void CountCopy(GM_ADDR x, GM_ADDR y, GM_ADDR, GM_ADDR, const GlobalTensor<int32_t> &pg)
{
    const int32_t tiles = pg.GetValue(0), tile = pg.GetValue(1);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T *)x + GetBlockIdx() * tiles * tile, tiles * tile);
    yg.SetGlobalBuffer((__gm__ T *)y + GetBlockIdx() * tiles * tile, tiles * tile);
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> in;
    TQue<QuePosition::VECOUT, 2> out;
    pipe.InitBuffer(in, 2, tile * sizeof(T));
    pipe.InitBuffer(out, 2, tile * sizeof(T));
    for (int32_t i = 0; i < tiles; ++i) {
        LocalTensor<T> a = in.AllocTensor<T>();
        DataCopy(a, xg[i * tile], tile);
        in.EnQue(a);
        LocalTensor<T> b = in.DeQue<T>();
        LocalTensor<T> c = out.AllocTensor<T>();
        DataCopy(c, b, tile);
        out.EnQue(c);
        in.FreeTensor(b);
        LocalTensor<T> d = out.DeQue<T>();
        DataCopy(yg[i * tile], d, tile);
        out.FreeTensor(d);
    }
}
"""


@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
def test_count_form_round_trip_is_bit_exact(dtype):
    rng = np.random.default_rng()
    cores, tiles, tile = 4, 3, 512
    x = random_array(rng, cores * tiles * tile, dtype)
    y = np.zeros_like(x)
    stats = launch(CountCopy, dtype, [x, y], [tiles, tile], block_dim=cores)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))
    assert stats.total["gm_read_bytes"] == x.nbytes and stats.total["gm_write_bytes"] == x.nbytes
    assert stats.total["gm_scalar_reads"] == cores * 4  # the case, dtype, tiles and tile parameters
    assert stats.total["copy_in_instrs"] == cores * tiles and stats.total["copy_out_instrs"] == cores * tiles


# DataCopyParams form: gather blocks from GM with a stride, copy UB -> UB, scatter to GM with another.
Strided = """
template <typename T>
void Strided(GM_ADDR x, GM_ADDR y, GM_ADDR, GM_ADDR, const GlobalTensor<int32_t> &pg)
{
    const uint16_t count = pg.GetValue(0), len = pg.GetValue(1), gmIn = pg.GetValue(2), ub = pg.GetValue(3),
                   gmOut = pg.GetValue(4);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T *)x);
    yg.SetGlobalBuffer((__gm__ T *)y);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, count * (len + ub) * 32);
    pipe.InitBuffer(out, 1, count * len * 32);
    LocalTensor<T> a = in.AllocTensor<T>();
    DataCopy(a, xg, DataCopyParams(count, len, gmIn, ub));
    in.EnQue(a);
    a = in.DeQue<T>();
    LocalTensor<T> b = out.AllocTensor<T>();
    DataCopy(b, a, DataCopyParams(count, len, ub, 0));
    out.EnQue(b);
    in.FreeTensor(a);
    b = out.DeQue<T>();
    DataCopy(yg, b, DataCopyParams(count, len, 0, gmOut));
    out.FreeTensor(b);
}
"""


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("count,len_,gm_in,ub,gm_out", [(1, 4, 0, 0, 0), (5, 2, 3, 1, 2), (7, 1, 1, 3, 0)])
def test_params_form_strides_are_gaps_in_32_byte_blocks(dtype, count, len_, gm_in, ub, gm_out):
    rng = np.random.default_rng()
    blk = 32 // np.dtype(dtype).itemsize
    x = random_array(rng, count * (len_ + gm_in) * blk, dtype)
    y = random_array(rng, count * (len_ + gm_out) * blk, dtype)
    expected = y.copy()
    for i in range(count):
        expected[i * (len_ + gm_out) * blk:][:len_ * blk] = x[i * (len_ + gm_in) * blk:][:len_ * blk]
    launch(Strided, dtype, [x, y], [count, len_, gm_in, ub, gm_out])
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))


# DataCopyPad GM -> UB, then the padded rows (row32 blocks each, dstStride blocks apart) out to GM.
PadIn = """
template <typename T>
void PadIn(GM_ADDR x, GM_ADDR y, GM_ADDR pad, GM_ADDR, const GlobalTensor<int32_t> &pg)
{
    const uint16_t count = pg.GetValue(0);
    const uint32_t len = pg.GetValue(1), srcStride = pg.GetValue(2), dstStride = pg.GetValue(3);
    const bool isPad = pg.GetValue(4) != 0;
    const uint8_t left = pg.GetValue(5), right = pg.GetValue(6);
    const uint16_t row32 = pg.GetValue(7);
    GlobalTensor<T> xg, yg, padg;
    xg.SetGlobalBuffer((__gm__ T *)x);
    yg.SetGlobalBuffer((__gm__ T *)y);
    padg.SetGlobalBuffer((__gm__ T *)pad, 1);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> in;
    pipe.InitBuffer(in, 1, count * (row32 + dstStride) * 32);
    LocalTensor<T> a = in.AllocTensor<T>();
    DataCopyPad(a, xg, DataCopyExtParams(count, len, srcStride, dstStride, 0),
                DataCopyPadExtParams<T>(isPad, left, right, padg.GetValue(0)));
    in.EnQue(a);
    a = in.DeQue<T>();
    DataCopy(yg, a, DataCopyParams(count, row32, dstStride, 0));
    in.FreeTensor(a);
}
"""


def pad_in_case(dtype, count, n, src_gap, dst_gap, is_pad, left, right):
    """Runs PAD_IN_KERNEL on fresh data; returns (x blocks as rows of n, pad value, y rows)."""
    rng = np.random.default_rng()
    size = np.dtype(dtype).itemsize
    row = (left + n + right) * size
    row32 = -(-row // 32)
    x = random_array(rng, count * (n + src_gap), dtype)
    pad = random_array(rng, 1, dtype)
    y = np.zeros(count * row32 * 32 // size, dtype)
    launch(PadIn, dtype, [x, y, pad], [count, n * size, src_gap * size, dst_gap, int(is_pad), left, right, row32])
    blocks = x.reshape(count, n + src_gap)[:, :n]
    return blocks, pad[0], y.reshape(count, -1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("left,right", [(1, 2), (0, 3), (2, 0)])
def test_pad_in_fills_padding_and_dummy_with_padding_value(dtype, left, right):
    blocks, pad, rows = pad_in_case(dtype, count=3, n=13, src_gap=5, dst_gap=1, is_pad=True,
                                    left=left, right=right)
    n = blocks.shape[1]
    np.testing.assert_array_equal(rows[:, left:left + n].view(np.uint8), blocks.view(np.uint8).reshape(3, -1))
    rest = np.concatenate([rows[:, :left], rows[:, left + n:]], axis=1)
    assert rest.shape[1] > 0
    np.testing.assert_array_equal(rest.view(np.uint8), np.full(rest.shape, pad, rest.dtype).view(np.uint8))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("is_pad", [False, True])
def test_pad_in_without_padding_repeats_first_element_as_dummy(dtype, is_pad):
    # The documentation: with leftPadding = rightPadding = 0 the dummy elements repeat the block's first
    # element. It does not make isPad matter here; ASCENDC_API_NOTES.md said isPad fills them with
    # paddingValue, and the documentation wins (isPad=True still repeats the first element).
    blocks, _, rows = pad_in_case(dtype, count=4, n=5, src_gap=3, dst_gap=2, is_pad=is_pad,
                                  left=0, right=0)
    expected = np.concatenate([blocks, np.repeat(blocks[:, :1], rows.shape[1] - 5, axis=1)], axis=1)
    np.testing.assert_array_equal(rows.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pad_in_random_padding_is_poison(dtype):
    # isPad false with padding: padding and dummy are random on the NPU, so copying them out is an error.
    with pytest.raises(TwinRuleError, match=r"holds undefined data after the launch"):
        pad_in_case(dtype, count=2, n=7, src_gap=0, dst_gap=0, is_pad=False, left=0, right=1)


# UB -> GM: exactly len bytes per block, UB blocks srcStride 32-byte blocks apart, GM gaps in bytes.
PadOut = """
template <typename T>
void PadOut(GM_ADDR x, GM_ADDR y, GM_ADDR, GM_ADDR, const GlobalTensor<int32_t> &pg)
{
    const uint16_t count = pg.GetValue(0);
    const uint32_t len = pg.GetValue(1), srcStride = pg.GetValue(2), dstStride = pg.GetValue(3), ub = pg.GetValue(4);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T *)x);
    yg.SetGlobalBuffer((__gm__ T *)y);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 1, ub);
    LocalTensor<T> a = out.AllocTensor<T>();
    DataCopy(a, xg, ub / sizeof(T));
    out.EnQue(a);
    a = out.DeQue<T>();
    DataCopyPad(yg, a, DataCopyExtParams(count, len, srcStride, dstStride, 0));
    out.FreeTensor(a);
}
"""


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("count,n,src_gap,dst_gap", [(1, 3, 0, 0), (6, 21, 1, 3), (3, 16, 2, 0)])
def test_pad_out_writes_exactly_block_len_bytes(dtype, count, n, src_gap, dst_gap):
    rng = np.random.default_rng()
    size = np.dtype(dtype).itemsize
    ub_row = -(-n * size // 32) * 32 + src_gap * 32
    x = random_array(rng, count * ub_row // size, dtype)
    y = random_array(rng, count * (n + dst_gap) + 7, dtype)
    expected = y.copy()
    for i in range(count):
        expected[i * (n + dst_gap):][:n] = x[i * ub_row // size:][:n]
    launch(PadOut, dtype, [x, y], [count, n * size, src_gap, dst_gap * size, x.nbytes])
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))


# y += a; y += b under SetAtomicAdd<T>, then an ordinary copy of a to z after SetAtomicNone.
AtomicAdd = """
template <typename T>
void AtomicAdd(GM_ADDR a, GM_ADDR b, GM_ADDR y, GM_ADDR z, const GlobalTensor<int32_t> &)
{
    constexpr int32_t n = 256 / sizeof(T);
    GlobalTensor<T> ag, bg, yg, zg;
    ag.SetGlobalBuffer((__gm__ T *)a, n);
    bg.SetGlobalBuffer((__gm__ T *)b, n);
    yg.SetGlobalBuffer((__gm__ T *)y, n);
    zg.SetGlobalBuffer((__gm__ T *)z, n);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> in;
    pipe.InitBuffer(in, 2, n * sizeof(T));
    LocalTensor<T> ta = in.AllocTensor<T>();
    LocalTensor<T> tb = in.AllocTensor<T>();
    DataCopy(ta, ag, n);
    DataCopy(tb, bg, n);
    in.EnQue(ta);
    in.EnQue(tb);
    ta = in.DeQue<T>();
    tb = in.DeQue<T>();
    SetAtomicAdd<T>();
    DataCopy(yg, ta, n);
    DataCopyPad(yg, tb, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
    SetAtomicNone();
    DataCopy(zg, ta, n);
    in.FreeTensor(ta);
    in.FreeTensor(tb);
}
"""


@pytest.mark.parametrize("dtype", FLOATS + [np.int8, np.int16, np.int32])
def test_atomic_add_adds_in_the_data_type(dtype):
    rng = np.random.default_rng()
    n = 256 // np.dtype(dtype).itemsize
    a, b, y0 = (random_array(rng, n, dtype) for _ in range(3))
    y, z = y0.copy(), random_array(rng, n, dtype)
    launch(AtomicAdd, dtype, [a, b, y, z], [])
    with np.errstate(over="ignore"):
        expected = (y0 + a) + b  # NumPy rounds each 16-bit sum once from fp32, as the twin; ints wrap
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(z.view(np.uint8), a.view(np.uint8))


CASES = [CountCopy, Strided, PadIn, PadOut, AtomicAdd]
NAMES = ["CountCopy", "Strided", "PadIn", "PadOut", "AtomicAdd"]
# All cases for all element types in one kernel (one compile): params = [case, dtype code, case params...].
SOURCE = "".join(CASES) + """
template <typename T>
void Case(int32_t which, GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d, const GlobalTensor<int32_t> &p)
{
    switch (which) {
""" + "".join(f"    case {i}: {n}<T>(a, b, c, d, p); break;\n" for i, n in enumerate(NAMES)) + """    }
}

extern "C" __global__ __aicore__ void copy_case(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d, GM_ADDR params)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, 16);
    const int32_t which = pg.GetValue(0);
    switch (pg.GetValue(1)) {
""" + "".join(f"    case {i}: Case<{CTYPES[t]}>(which, a, b, c, d, pg[2]); break;\n" for i, t in enumerate(DTYPES)) + """    }
}
"""


def launch(case: str, dtype, arrays, case_params, block_dim=1):
    """Runs `case` (one of CASES) for `dtype` on GM buffers `arrays` (padded with null GM_ADDRs)."""
    gm = list(arrays) + [None] * (4 - len(arrays))
    code = [CASES.index(case), DTYPES.index(np.dtype(dtype))]
    return run(SOURCE, "copy_case", gm + [params(*code, *case_params)], block_dim=block_dim)
