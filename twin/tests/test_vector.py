# SPDX-License-Identifier: BSD-3-Clause
"""Vector instructions of the twin (twin/include/twin/vector.h) against NumPy: every binary, scalar
and unary instruction in its count form, its repeat forms (continuous mask, bit mask, the mask
registers in Normal and Counter mode) with random strides, Duplicate and Brcb; then one test per
enforced rule, each with the broken call and the fixed one."""
import ml_dtypes
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from float_bits import assert_same
from small_kernels import CTYPES, params, random_array, run
from vector_driver import (BINARY, REPEAT, SCALAR, UNARY, active_lanes, broken_then_fixed, element_index, launch,
                           mask_from_bits, op_code)

ARITH = [np.float16, np.float32, np.int16, np.int32]
FLOATS = [np.float16, np.float32]
FILL = [np.float16, ml_dtypes.bfloat16, np.float32, np.int16, np.int32]
SIZES = [1, 77, 1000, 4099]


def reference(name, a, b):
    """The element operation as NumPy computes it in the same dtype (16-bit floats round once)."""
    with np.errstate(all="ignore"):
        return {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum,
                "Min": np.minimum, "Adds": np.add, "Muls": np.multiply, "Maxs": np.maximum,
                "Mins": np.minimum}[name](a, b).astype(a.dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,dtype", [(name, dtype) for name in BINARY for dtype in ARITH
                                        if name != "Div" or dtype in FLOATS])  # A2 has no integer Div
def test_binary_count_form(rng, name, dtype, n):
    a, b = random_array(rng, n, dtype, scale=4), random_array(rng, n, dtype, scale=4)
    if name == "Div":
        b[b == 0] = 1
    if dtype in FLOATS and n > 10:  # IEEE specials propagate: NaN, infinities, overflow to inf
        big = np.finfo(dtype).max
        a[:6], b[:6] = [np.nan, 1, np.inf, -np.inf, big, -big], [2, np.nan, -np.inf, -np.inf, big, big]
    d = random_array(rng, n + 40, dtype, scale=4)  # lanes past n keep their values
    out = launch(op_code("kBinaryCount", name), dtype, a, b, d, count=n)
    assert_same(out[:n], reference(name, a, b))
    assert_same(out[n:n + 40], d[n:])


def repeat_case(rng, dtype, form):
    """Random repeat, strides and mask of one repeat-form call; returns (kwargs, lanes that run)."""
    lanes = REPEAT // np.dtype(dtype).itemsize
    repeat = int(rng.integers(1, 9))
    strides = tuple(int(s) for s in rng.integers(1, 4, 3)) + tuple(int(s) for s in rng.integers(8, 14, 3))
    kw = dict(repeat=repeat, strides=strides)
    if form == "mask_len":
        kw["mask_len"] = int(rng.integers(1, lanes + 1))
        r, l = active_lanes(lanes, repeat, mask_len=kw["mask_len"])
    elif form in ("mask_bits", "register_normal"):
        kw["mask_bits"] = mask_from_bits(rng, lanes)
        r, l = active_lanes(lanes, repeat, mask_bits=kw["mask_bits"])
    else:  # register_counter: the first `count` lanes, repeat after repeat
        kw["count"] = int(rng.integers(1, lanes * repeat + 1))
        r, l = active_lanes(lanes, repeat, count=kw["count"])
    return kw, r, l


FORMS = {"mask_len": "kBinaryMaskLen", "mask_bits": "kBinaryMaskBits", "register_normal": "kBinaryRegNormal",
         "register_counter": "kBinaryRegCounter"}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("dtype", ARITH)
@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "Max", "Min"])
def test_binary_repeat_forms(rng, name, dtype, form):
    kw, r, l = repeat_case(rng, dtype, form)
    size = np.dtype(dtype).itemsize
    blk, rep = kw["strides"][:3], kw["strides"][3:]
    n = 8 * 14 * REPEAT // size + 64
    a, b, d = random_array(rng, n, dtype, scale=4), random_array(rng, n, dtype, scale=4), random_array(rng, n, dtype, scale=4)
    out = launch(op_code(FORMS[form], name), dtype, a, b, d, **kw)
    di, ai, bi = (element_index(r, l, blk[k], rep[k], size) for k in range(3))
    expected = d.copy()
    expected[di] = reference(name, a[ai], b[bi])
    assert_same(out[:n], expected)


def test_accumulation_onto_src1_with_zero_repeat_stride(rng):
    """The documented exception to the overlap rule: dst on src1, both repeat strides 0, so every
    repeat adds into the same lanes, in repeat order."""
    a, d = random_array(rng, 64 * 6, np.float32, scale=4), random_array(rng, 64, np.float32, scale=4)
    out = launch(op_code("kBinaryMaskLen", "Add"), np.float32, a, None, d, mask_len=64, repeat=6,
                 strides=(1, 1, 1, 0, 8, 0), alias=2)
    expected = d.copy()
    for r in range(6):
        expected = a[64 * r:64 * (r + 1)] + expected
    assert_same(out, expected)


@pytest.mark.parametrize("n", [5, 300])
@pytest.mark.parametrize("dtype", ARITH)
@pytest.mark.parametrize("name", SCALAR)
def test_scalar_ops(rng, name, dtype, n):
    a, d = random_array(rng, n, dtype, scale=4), random_array(rng, n, dtype, scale=4)
    s = random_array(rng, 1, dtype, scale=4)[0]
    out = launch(op_code("kScalarCount", name), dtype, a, None, d, count=n, scalar=s)
    assert_same(out[:n], reference(name, a, np.full(n, s, dtype)))
    kw, r, l = repeat_case(rng, dtype, "mask_bits")
    size = np.dtype(dtype).itemsize
    m = 8 * 14 * REPEAT // size + 64
    a, d = random_array(rng, m, dtype, scale=4), random_array(rng, m, dtype, scale=4)
    kw["strides"] = kw["strides"][:2] + (1,) + kw["strides"][3:5] + (8,)
    out = launch(op_code("kScalarMaskBits", name), dtype, a, None, d, scalar=s, **kw)
    di, ai = element_index(r, l, kw["strides"][0], kw["strides"][3], size), \
        element_index(r, l, kw["strides"][1], kw["strides"][4], size)
    expected = d.copy()
    expected[di] = reference(name, a[ai], np.full(len(ai), s, dtype))
    assert_same(out[:m], expected)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_ops(rng, name, dtype):
    n = 333
    a = random_array(rng, n, dtype, scale=4)
    if name in ("Ln", "Sqrt"):
        a = np.abs(a)
    out = launch(op_code("kUnaryCount", name), dtype, a, None, np.zeros(n, dtype), count=n)
    with np.errstate(all="ignore"):
        ref = {"Exp": np.exp, "Ln": np.log, "Sqrt": np.sqrt, "Abs": np.abs,
               "Reciprocal": lambda x: 1 / x}[name](a.astype(np.float32)).astype(dtype)
    if name in ("Exp", "Ln"):  # libm and NumPy may differ in the last bit; the hardware's are approximations too
        np.testing.assert_allclose(out[:n].astype(np.float32), ref.astype(np.float32), rtol=2e-3 if dtype == np.float16 else 1e-6)
    else:
        assert_same(out[:n], ref)


@pytest.mark.parametrize("n", [1, 130, 2049])
@pytest.mark.parametrize("dtype", FILL)
def test_duplicate(rng, dtype, n):
    s = random_array(rng, 1, dtype, scale=4)[0]
    d = random_array(rng, n + 20, dtype, scale=4)
    out = launch(op_code("kDupCount"), dtype, np.zeros(16, dtype), None, d, count=n, scalar=s)
    assert_same(out[:n], np.full(n, s, dtype))
    assert_same(out[n:n + 20], d[n:])
    lanes = REPEAT // np.dtype(dtype).itemsize
    mask_len, repeat, blk, rep = int(rng.integers(1, lanes + 1)), 3, 2, 17
    d = random_array(rng, 3 * 17 * 32 // np.dtype(dtype).itemsize + lanes * 2, dtype)
    out = launch(op_code("kDupMaskLen"), dtype, np.zeros(16, dtype), None, d, mask_len=mask_len, repeat=repeat,
                 strides=(blk, 1, 1, rep, 8, 8), scalar=s)
    r, l = active_lanes(lanes, repeat, mask_len=mask_len)
    expected = d.copy()
    expected[element_index(r, l, blk, rep, np.dtype(dtype).itemsize)] = s
    assert_same(out[:len(d)], expected)


@pytest.mark.parametrize("blk,rep", [(1, 8), (0, 8), (2, 20)])
@pytest.mark.parametrize("dtype", FILL)
def test_brcb(rng, dtype, blk, rep):
    """Repeat i broadcasts src[8i + j] into block j; a block stride of 0 counts as 1."""
    repeat, size = 5, np.dtype(dtype).itemsize
    a = random_array(rng, 8 * repeat, dtype, scale=4)
    d = random_array(rng, (repeat * rep + 8 * max(blk, 1)) * 32 // size, dtype)
    out = launch(op_code("kBrcb"), dtype, a, None, d, repeat=repeat, strides=(blk, 1, 1, rep, 8, 8))
    expected = d.copy()
    per_block = 32 // size
    for i in range(repeat):
        for j in range(8):
            start = (i * rep + j * max(blk, 1)) * per_block
            expected[start:start + per_block] = a[8 * i + j]
    assert_same(out[:len(d)], expected)


# ---- rules: each case runs the broken call, then the fixed one --------------------------------------

F32 = np.float32
RULES = {
    # name: (call, rule as a regex, broken launch kwargs, fixed launch kwargs); op and dtype in the kwargs
    "bf16_arithmetic": ("Add", r"A2 supports half, float, int16_t and int32_t for this instruction \(got bfloat16_t",
                        dict(op=("kBinaryCount", "Add"), dtype=ml_dtypes.bfloat16, count=64),
                        dict(op=("kBinaryCount", "Add"), dtype=F32, count=64)),
    "integer_div": ("Div", r"A2 supports half and float for this instruction \(got int32_t",
                    dict(op=("kBinaryCount", "Div"), dtype=np.int32, count=64),
                    dict(op=("kBinaryCount", "Div"), dtype=F32, count=64)),
    "misaligned_operand": ("Add", r"the src0 operand must start 32-byte aligned in UB \(byte offset 4\)",
                           dict(op=("kBinaryCount", "Add"), dtype=F32, count=64, off=(1, 0, 0)),
                           dict(op=("kBinaryCount", "Add"), dtype=F32, count=64, off=(8, 0, 0))),
    "repeat_256": ("Add", r"repeatTime must be in \[0, 255\] \(got 256\)",
                   dict(op=("kBinaryMaskLen", "Add"), dtype=F32, mask_len=64, repeat=256, strides=(1, 1, 1, 0, 0, 0)),
                   dict(op=("kBinaryMaskLen", "Add"), dtype=F32, mask_len=64, repeat=255, strides=(1, 1, 1, 0, 0, 0))),
    "footprint_count": ("Add", "the dst operand's footprint .* must stay inside its buffer",
                        dict(op=("kBinaryCount", "Add"), dtype=F32, count=15360 + 8),
                        dict(op=("kBinaryCount", "Add"), dtype=F32, count=15360)),
    "footprint_strides": ("Muls", "the src operand's footprint .* must stay inside its buffer",
                          dict(op=("kScalarMaskLen", "Muls"), dtype=F32, mask_len=64, repeat=200,
                               strides=(1, 1, 1, 1, 10, 8)),
                          dict(op=("kScalarMaskLen", "Muls"), dtype=F32, mask_len=64, repeat=200,
                               strides=(1, 1, 1, 1, 9, 8))),
    "partial_overlap": ("Add", "the dst and src0 operands overlap partially within repeat 0: within one repeat",
                        dict(op=("kBinaryCount", "Add"), dtype=F32, count=256, alias=1, off=(8, 0, 0)),
                        dict(op=("kBinaryCount", "Add"), dtype=F32, count=256, alias=1, off=(0, 0, 0))),
    "cross_repeat_dependency": ("Sub", "the src0 operand of repeat 1 reads what the dst operand of repeat 0 wrote",
                                dict(op=("kBinaryCount", "Sub"), dtype=F32, count=256, alias=1, off=(0, 0, 64)),
                                dict(op=("kBinaryCount", "Sub"), dtype=F32, count=256, alias=1, off=(64, 0, 0))),
    "shifted_repeats": ("Add", "the dst and src0 operands overlap partially within repeat 1",
                        dict(op=("kBinaryMaskLen", "Add"), dtype=F32, mask_len=64, repeat=2, alias=1,
                             strides=(1, 1, 1, 4, 8, 8)),
                        dict(op=("kBinaryMaskLen", "Add"), dtype=F32, mask_len=64, repeat=2, alias=1,
                             strides=(1, 1, 1, 8, 8, 8))),
    "stride_width": ("Max", r"dstRepStride must fit in 8 bits \(got 256\)",
                     dict(op=("kBinaryMaskLen", "Max"), dtype=np.int16, mask_len=128, repeat=1, strides=(1, 1, 1, 256, 8, 8)),
                     dict(op=("kBinaryMaskLen", "Max"), dtype=np.int16, mask_len=128, repeat=1, strides=(1, 1, 1, 255, 8, 8))),
    "dst_block_stride_0": ("Duplicate", "dstBlockStride must not be 0",
                           dict(op=("kDupMaskLen",), dtype=np.float16, mask_len=128, repeat=1, strides=(0, 1, 1, 8, 8, 8)),
                           dict(op=("kDupMaskLen",), dtype=np.float16, mask_len=128, repeat=1, strides=(1, 1, 1, 8, 8, 8))),
    "mask_len_too_long": ("Mul", r"a continuous mask counts lanes of one repeat and must be in \[0, 64\]",
                          dict(op=("kBinaryMaskLen", "Mul"), dtype=F32, mask_len=65, repeat=1),
                          dict(op=("kBinaryMaskLen", "Mul"), dtype=F32, mask_len=64, repeat=1)),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_rule(rng, rule):
    broken_then_fixed(rng, *RULES[rule])


def test_undefined_lanes_reach_gm_only_when_computed_on(rng):
    """Lanes computed from poisoned UB are undefined and may not be copied to GM; poisoned lanes the
    mask switches off leave the destination as it was, so the same copy passes."""
    a, b, d = random_array(rng, 64, F32, scale=4), random_array(rng, 64, F32, scale=4), random_array(rng, 64, F32, scale=4)
    with pytest.raises(TwinRuleError, match="holds undefined data after the launch"):
        launch(op_code("kBinaryCount", "Add"), F32, a, b, d, count=64, defined_a=32)
    out = launch(op_code("kBinaryMaskLen", "Add"), F32, a, b, d, mask_len=32, repeat=1, defined_a=32)
    assert_same(out, np.concatenate([a[:32] + b[:32], d[32:]]))


# A freed queue tensor keeps its bytes until the queue hands its buffer out again (FreeTensor moves
# nothing): ops-nn's rms_norm reads its rstd on V after CopyOut freed it. VARIANT 0: V reads a freed
# VECOUT tensor (MTE3 copied it out; V, its producer, allocates it next): fine. 1: the same read
# after the next AllocTensor of the buffer: stale. 2: V reads a freed VECIN tensor and MTE2 then
# refills the buffer: FreeTensor's V -> MTE2 flag came before the read, so the pipe rule objects.
USE_AFTER_FREE = """#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void uaf(GM_ADDR a, GM_ADDR x, GM_ADDR y)
{
    GlobalTensor<float> ag, xg, yg;
    ag.SetGlobalBuffer((__gm__ float *)a, 64);
    xg.SetGlobalBuffer((__gm__ float *)x, 64);
    yg.SetGlobalBuffer((__gm__ float *)y, 64);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qi;
    TQue<QuePosition::VECOUT, 1> qo;
    TBuf<QuePosition::VECCALC> b;
    pipe.InitBuffer(qi, 1, 256);
    pipe.InitBuffer(qo, 1, 256);
    pipe.InitBuffer(b, 256);
    LocalTensor<float> s = b.Get<float>();
    LocalTensor<float> in = qi.AllocTensor<float>();
    DataCopy(in, ag, 64);
    qi.EnQue(in);
    in = qi.DeQue<float>();
    LocalTensor<float> t = qo.AllocTensor<float>();
    Muls(t, in, 2.0f, 64);
    qo.EnQue(t);
    t = qo.DeQue<float>();
    DataCopy(xg, t, 64);
    qo.FreeTensor(t);
    qi.FreeTensor(in);
#if VARIANT == 1
    LocalTensor<float> u = qo.AllocTensor<float>();
    Duplicate(u, 0.0f, 64);
#endif
#if VARIANT == 2
    Adds(s, in, 1.0f, 64);
    in = qi.AllocTensor<float>();
    DataCopy(in, ag, 64);
    qi.FreeTensor(in);
#else
    Adds(s, t, 1.0f, 64);
#endif
#if VARIANT == 1
    qo.FreeTensor(u);
#endif
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, s, 64);
}
"""


def test_a_freed_tensor_is_readable_until_its_buffer_is_handed_out_again(rng, run_source):
    a = random_array(rng, 64, np.float32)
    x, y = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run_source(USE_AFTER_FREE, "uaf", [a, x, y], defines={"VARIANT": 0})
    np.testing.assert_array_equal(x, a * np.float32(2))
    np.testing.assert_array_equal(y, a * np.float32(2) + np.float32(1))
    with pytest.raises(TwinRuleError, match="core 0: Adds: the LocalTensor is used after FreeTensor returned its "
                                            "buffer and a later AllocTensor"):
        run_source(USE_AFTER_FREE, "uaf", [a, x, y], defines={"VARIANT": 1})
    with pytest.raises(TwinRuleError, match="data read by one pipe and then overwritten by another.*V read, MTE2"):
        run_source(USE_AFTER_FREE, "uaf", [a, x, y], defines={"VARIANT": 2})


@pytest.mark.parametrize("form", ["count", "mask_bits"])
def test_counters_count_repeats_and_active_lanes(rng, form):
    """One vector instruction: its repeats and its mask-enabled lanes (the performance model's input)."""
    a, b = random_array(rng, 1000, np.float16, scale=4), random_array(rng, 1000, np.float16, scale=4)
    if form == "count":
        _, stats = launch(op_code("kBinaryCount", "Add"), np.float16, a, b, np.zeros(1000, np.float16), count=1000,
                          with_stats=True)
        repeats, lanes = 8, 1000  # 128 half lanes per repeat
    else:
        bits = mask_from_bits(rng, 128)
        _, stats = launch(op_code("kBinaryMaskBits", "Add"), np.float16, a, b, np.zeros(1000, np.float16),
                          mask_bits=bits, repeat=3, with_stats=True)
        repeats, lanes = 3, 3 * (bin(bits[0]).count("1") + bin(bits[1]).count("1"))
    assert (stats.total["vector_instrs"], stats.total["vector_repeats"], stats.total["active_lanes"]) == \
        (1, repeats, lanes)


# SetVectorMask(maskHigh, maskLow) writes the mask register whatever its MaskMode template says, as
# asc-devkit's A2 implementation does; the core's mode (SetMaskCount / SetMaskNorm) decides how the
# two words are read: in Counter mode maskLow = 40 counts 40 elements, in Normal mode it is the lane
# bits 0b101000 (lanes 3 and 5).
MASK_MODE = """
extern "C" __global__ __aicore__ void mask_mode(GM_ADDR x)
{
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float *)x, 64);
    TPipe pipe;
    TBuf<QuePosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 3.0f, 64);
#if COUNT
    SetMaskCount();
#endif
#if TEMPLATE_COUNTER
    SetVectorMask<float, MaskMode::COUNTER>(0, 40);
#else
    SetVectorMask<float, MaskMode::NORMAL>(0, 40);
#endif
    Muls<float, false>(t, t, 2.0f, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
    SetMaskNorm();
    ResetMask();
    PipeBarrier<PIPE_ALL>();
    DataCopy(xg, t, 64);
}
"""


@pytest.mark.parametrize("template_counter", [1, 0])
@pytest.mark.parametrize("count", [1, 0])
def test_mask_words_are_read_by_the_cores_mode_not_the_template(template_counter, count):
    x = np.zeros(64, np.float32)
    run(MASK_MODE, "mask_mode", [x], defines={"COUNT": count, "TEMPLATE_COUNTER": template_counter})
    lanes = np.arange(64)
    on = lanes < 40 if count else (40 >> lanes) & 1 == 1
    np.testing.assert_array_equal(x, np.where(on, 6.0, 3.0).astype(np.float32))


FUSED = """
extern "C" __global__ __aicore__ void fused(GM_ADDR a, GM_ADDR b, GM_ADDR d, GM_ADDR s, GM_ADDR n)
{
    GlobalTensor<DTYPE> ag, bg, dg, sg;
    GlobalTensor<int32_t> ng;
    ng.SetGlobalBuffer((__gm__ int32_t *)n, 1);
    const int32_t count = ng.GetValue(0);
    ag.SetGlobalBuffer((__gm__ DTYPE *)a, count);
    bg.SetGlobalBuffer((__gm__ DTYPE *)b, count);
    dg.SetGlobalBuffer((__gm__ DTYPE *)d, count);
    sg.SetGlobalBuffer((__gm__ DTYPE *)s, 1);
    TPipe pipe;
    TBuf<QuePosition::VECCALC> buf;
    const uint32_t bytes = (count * sizeof(DTYPE) + 31) / 32 * 32;
    pipe.InitBuffer(buf, 3 * bytes);
    const LocalTensor<DTYPE> at = buf.Get<DTYPE>();
    const LocalTensor<DTYPE> bt = at[bytes / sizeof(DTYPE)];
    const LocalTensor<DTYPE> dt = bt[bytes / sizeof(DTYPE)];
    DataCopy(at, ag, bytes / sizeof(DTYPE));
    DataCopy(bt, bg, bytes / sizeof(DTYPE));
    DataCopy(dt, dg, bytes / sizeof(DTYPE));
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
#if AXPY
    Axpy(dt, at, sg.GetValue(0), count);
#else
    MulAddDst(dt, at, bt, count);
#endif
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dg, dt, bytes / sizeof(DTYPE));
}
"""


@pytest.mark.parametrize("axpy", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_fused_multiply_add_rounds_product_then_sum(rng, dtype, axpy):
    """MulAddDst: d = a*b + d; Axpy: d = a*s + d; each step rounded to the dtype (two roundings)."""
    n = 1000
    block = 32 // np.dtype(dtype).itemsize
    size = -(-n // block) * block
    a, b, d = random_array(rng, size, dtype, scale=4), random_array(rng, size, dtype, scale=4), random_array(rng, size, dtype, scale=4)
    s = random_array(rng, 1, dtype, scale=4)
    with np.errstate(all="ignore"):
        expected = (a * (np.full(size, s[0], dtype) if axpy else b)).astype(dtype) + d
    out = d.copy()
    stats = run(FUSED, "fused", [a, b, out, s, params(n)], defines={"DTYPE": CTYPES[np.dtype(dtype)], "AXPY": int(axpy)})
    assert_same(out[:n], expected[:n].astype(dtype))
    assert_same(out[n:], d[n:])
    assert (stats.total["vector_instrs"], stats.total["vector_repeats"]) == (1, -(-n // (256 // a.itemsize)))


def test_fused_multiply_add_is_float_only(rng):
    a = random_array(rng, 64, np.int32, scale=4)
    with pytest.raises(TwinRuleError, match="MulAddDst: A2 supports half and float"):
        run(FUSED, "fused", [a, a.copy(), a.copy(), a[:1].copy(), params(64)], defines={"DTYPE": "int32_t", "AXPY": 0})
