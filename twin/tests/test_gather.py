# SPDX-License-Identifier: BSD-3-Clause
"""Gather and Gatherb of the twin (twin/include/twin/gather.h) against NumPy fancy indexing of the
documented semantics (byte offsets from src's start), then their rules."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import CTYPES, params, random_array, run

# GM: p = {count or repeatTime, base, dstBlkStride, dstRepStride, dst elements}, the source values,
# the byte offsets; UB: the source (4096 elements), the offsets and dst (4096 elements each).
KERNEL = """
template <typename T, bool kInBlocks>
__aicore__ void Run(GM_ADDR p, GM_ADDR src, GM_ADDR off, GM_ADDR out)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 5);
    const int32_t n = pg.GetValue(0), base = pg.GetValue(1), blk = pg.GetValue(2), rep = pg.GetValue(3);
    const int32_t out_len = pg.GetValue(4);
    GlobalTensor<T> gs, go;
    GlobalTensor<uint32_t> gf;
    gs.SetGlobalBuffer((__gm__ T *)src);
    gf.SetGlobalBuffer((__gm__ uint32_t *)off);
    go.SetGlobalBuffer((__gm__ T *)out);
    TPipe pipe;
    TBuf<QuePosition::VECCALC> bs, bf, bd;
    pipe.InitBuffer(bs, 4096 * sizeof(T));
    pipe.InitBuffer(bf, 4096 * 4);
    pipe.InitBuffer(bd, 4096 * sizeof(T));
    LocalTensor<T> s = bs.Get<T>(), d = bd.Get<T>();
    LocalTensor<uint32_t> f = bf.Get<uint32_t>();
    DataCopy(s, gs, 4096);
    DataCopy(f, gf, kInBlocks ? 8 * n : (n + 7) / 8 * 8);
    DataCopy(d, go, out_len);
    PipeBarrier<PIPE_ALL>();
    if constexpr (kInBlocks) {
        Gatherb(d, s, f, uint8_t(n), GatherRepeatParams(uint8_t(blk), uint8_t(rep)));
    } else {
        Gather(d, s, f, uint32_t(base), uint32_t(n));
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, d, out_len);
}
extern "C" __global__ __aicore__ void gather_u16(GM_ADDR p, GM_ADDR s, GM_ADDR f, GM_ADDR o) { Run<uint16_t, true>(p, s, f, o); }
extern "C" __global__ __aicore__ void gather_u32(GM_ADDR p, GM_ADDR s, GM_ADDR f, GM_ADDR o) { Run<uint32_t, true>(p, s, f, o); }
extern "C" __global__ __aicore__ void gather_half(GM_ADDR p, GM_ADDR s, GM_ADDR f, GM_ADDR o) { Run<half, false>(p, s, f, o); }
extern "C" __global__ __aicore__ void gather_float(GM_ADDR p, GM_ADDR s, GM_ADDR f, GM_ADDR o) { Run<float, false>(p, s, f, o); }
extern "C" __global__ __aicore__ void gather_i16(GM_ADDR p, GM_ADDR s, GM_ADDR f, GM_ADDR o) { Run<int16_t, false>(p, s, f, o); }
"""
N = 4096
NAMES = {np.dtype(np.float16): "gather_half", np.dtype(np.float32): "gather_float", np.dtype(np.int16): "gather_i16",
         np.dtype(np.uint16): "gather_u16", np.dtype(np.uint32): "gather_u32"}


def launch(dtype, src, offsets, before, n, base=0, dst_blk=0, dst_rep=0):
    """The kernel's dst after one Gather (n elements) or Gatherb (n repeats) over `before`."""
    out = before.copy()
    padded = np.zeros(max(-(-len(offsets) // 8) * 8, 8), np.uint32)
    padded[:len(offsets)] = offsets
    run(KERNEL, NAMES[np.dtype(dtype)], [params(n, base, dst_blk, dst_rep, N), src, padded, out])
    return out


@pytest.mark.parametrize("count, base", [(1, 0), (300, 64), (4096, 2)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int16])
def test_gather_takes_the_element_at_each_byte_offset(rng, dtype, count, base):
    size = np.dtype(dtype).itemsize
    src, before = random_array(rng, N, dtype), random_array(rng, N, dtype)
    offsets = rng.integers(0, N - base, count).astype(np.uint32) * size
    out = launch(dtype, src, offsets, before, count, base=base * size)
    want = before.copy()
    want[:count] = src[base + offsets.astype(np.int64) // size]
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dst_blk, dst_rep", [(1, 8), (0, 8), (2, 17)])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_gatherb_moves_each_block_to_its_place(rng, dtype, dst_blk, dst_rep):
    """Block b of repeat r lands (r * dstRepStride + b * dstBlkStride) blocks into dst (stride 0 as 1)."""
    repeat, per_block = 6, 32 // np.dtype(dtype).itemsize
    src, before = random_array(rng, N, dtype), random_array(rng, N, dtype)
    offsets = rng.integers(0, N // per_block, repeat * 8).astype(np.uint32) * 32
    out = launch(dtype, src, offsets, before, repeat, dst_blk=dst_blk, dst_rep=dst_rep)
    want = before.copy()
    for i, off in enumerate(offsets):
        r, b = divmod(i, 8)
        at = (r * dst_rep + b * (dst_blk or 1)) * per_block
        first = off // np.dtype(dtype).itemsize
        want[at:at + per_block] = src[first:first + per_block]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype, n, offsets, rule", [
    (np.float32, 2, [0, 6], r"Gather: offset 1 must be a multiple of 4 bytes \(got 6\)"),
    (np.float16, 1, [2**20], r"Gather: offset 0 addresses past the end of UB"),
    (np.uint32, 1, [16] + [0] * 7, r"Gatherb: offset 0 must be a multiple of 32 bytes \(got 16\)"),
])
def test_offset_rules(rng, dtype, n, offsets, rule):
    src, before = random_array(rng, N, dtype), random_array(rng, N, dtype)
    with pytest.raises(TwinRuleError, match=rf"core 0: {rule}"):
        launch(dtype, src, np.array(offsets, np.uint32), before, n)
    fixed = [o // 32 * 32 for o in offsets] if dtype == np.uint32 else [o % 1024 // 4 * 4 for o in offsets]
    launch(dtype, src, np.array(fixed, np.uint32), before, n)


# GM: p = {pattern (0: the tensor), reduceMode, mask, src0BlockStride, repeatTimes, src0RepeatStride,
# src1RepeatStride}, src0 and the pattern words (1024 each), dst (1024, the count written after it).
MASK_KERNEL = """
template <typename T, typename U>
__aicore__ void RunMask(GM_ADDR p, GM_ADDR src, GM_ADDR pat, GM_ADDR out)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 7);
    int32_t cfg[7];
    for (int i = 0; i < 7; ++i) cfg[i] = pg.GetValue(i);
    GlobalTensor<T> gs, go;
    GlobalTensor<U> gp;
    gs.SetGlobalBuffer((__gm__ T *)src);
    gp.SetGlobalBuffer((__gm__ U *)pat);
    go.SetGlobalBuffer((__gm__ T *)out);
    TPipe pipe;
    TBuf<QuePosition::VECCALC> bs, bp, bd;
    pipe.InitBuffer(bs, 1024 * sizeof(T));
    pipe.InitBuffer(bp, 1024 * sizeof(U));
    pipe.InitBuffer(bd, 1024 * sizeof(T));
    LocalTensor<T> s = bs.Get<T>(), d = bd.Get<T>();
    LocalTensor<U> m = bp.Get<U>();
    DataCopy(s, gs, 1024);
    DataCopy(m, gp, 1024);
    DataCopy(d, go, 1024);
    PipeBarrier<PIPE_ALL>();
    const GatherMaskParams params{static_cast<uint8_t>(cfg[3]), static_cast<uint16_t>(cfg[4]),
                                  static_cast<uint16_t>(cfg[5]), static_cast<uint8_t>(cfg[6])};
    uint64_t kept = 0;
    if (cfg[0] == 0) {
        GatherMask(d, s, m, cfg[1] != 0, uint32_t(cfg[2]), params, kept);
    } else {
        GatherMask(d, s, uint8_t(cfg[0]), cfg[1] != 0, uint32_t(cfg[2]), params, kept);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, d, 1024);
    pg.SetValue(0, int32_t(kept));
}
extern "C" __global__ __aicore__ void mask_half(GM_ADDR p, GM_ADDR s, GM_ADDR m, GM_ADDR o) { RunMask<half, uint16_t>(p, s, m, o); }
extern "C" __global__ __aicore__ void mask_u32(GM_ADDR p, GM_ADDR s, GM_ADDR m, GM_ADDR o) { RunMask<uint32_t, uint32_t>(p, s, m, o); }
"""


def gather_mask_model(src, bits, repeat, per_repeat, blk, rep):
    """The selected src elements, packed: bits(r, i) selects element i of repeat r."""
    per_block = 32 // src.dtype.itemsize
    picked = [src[r * rep * per_block + i // per_block * blk * per_block + i % per_block]
              for r in range(repeat) for i in range(per_repeat) if bits(r, i)]
    return np.array(picked, src.dtype)


@pytest.mark.parametrize("pattern", [1, 2, 5, 7])
@pytest.mark.parametrize("dtype", [np.float16, np.uint32])
def test_gather_mask_built_in_pattern_normal_mode(rng, dtype, pattern):
    repeat, blk, rep = 3, 2, 17
    src, before = random_array(rng, 1024, dtype), random_array(rng, 1024, dtype)
    out, p = before.copy(), params(pattern, 0, 0, blk, repeat, rep, 0)
    run(MASK_KERNEL, "mask_half" if dtype == np.float16 else "mask_u32",
        [p, src, np.zeros(1024, np.uint16 if dtype == np.float16 else np.uint32), out])
    keep = {1: lambda i: i % 2 == 0, 2: lambda i: i % 2 == 1, 5: lambda i: i % 4 == 2, 7: lambda i: True}[pattern]
    picked = gather_mask_model(src, lambda r, i: keep(i), repeat, 256 // np.dtype(dtype).itemsize, blk, rep)
    want = before.copy()
    want[:len(picked)] = picked
    assert p[0] == len(picked)
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_gather_mask_user_pattern_counter_mode(rng):
    """Counter mode: mask elements per repeat, the pattern's bits consumed from the lowest up,
    src1RepeatStride blocks further on per repeat."""
    repeat, mask, blk, rep, rep1 = 3, 70, 1, 4, 1
    src, before = random_array(rng, 1024, np.uint32), random_array(rng, 1024, np.uint32)
    words = random_array(rng, 1024, np.uint32)
    out, p = before.copy(), params(0, 1, mask, blk, repeat, rep, rep1)
    run(MASK_KERNEL, "mask_u32", [p, src, words, out])
    bits = np.unpackbits(words.view(np.uint8), bitorder="little").astype(bool)
    picked = gather_mask_model(src, lambda r, i: bits[r * rep1 * 256 + i], repeat, mask, blk, rep)
    want = before.copy()
    want[:len(picked)] = picked
    assert p[0] == len(picked)
    np.testing.assert_array_equal(out, want)


def test_gather_mask_pattern_out_of_range_is_an_error(rng):
    src = random_array(rng, 1024, np.uint32)
    with pytest.raises(TwinRuleError, match=r"core 0: GatherMask: a built-in src1Pattern must be in \[1, 7\] \(got 8\)"):
        run(MASK_KERNEL, "mask_u32", [params(8, 0, 0, 1, 1, 8, 0), src, src.copy(), src.copy()])
