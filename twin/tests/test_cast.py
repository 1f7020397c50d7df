# SPDX-License-Identifier: BSD-3-Clause
"""Cast of the twin (twin/include/twin/cast.h) bit for bit against a NumPy model of every RoundMode:
the two representable neighbours of the exact value are found in float64, and each mode picks one
(ties, overflow, subnormals, signed zeros, Inf and NaN included); then the count and repeat forms,
the in-place layouts and the rules."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from ascendc_twin import run_kernel
from float_bits import assert_same, special_floats, step
from vector_driver import active_lanes, cpp_enum, element_index

SOURCE = Path(__file__).with_name("cast_driver.cpp")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
MODES = ["CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"]
DIRECTED = ["CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC"]


SLOTS, FORMS, PAIRS = (cpp_enum(SOURCE, name) for name in ("Slot", "Form", "Pair"))
PAIR_TYPES = {"kHalfToFloat": (F16, F32), "kBf16ToFloat": (BF16, F32), "kFloatToHalf": (F32, F16),
              "kFloatToBf16": (F32, BF16), "kFloatToFloat": (F32, F32), "kFloatToInt32": (F32, I32),
              "kHalfToInt32": (F16, I32), "kInt32ToFloat": (I32, F32),
              "kFloatToInt16": (F32, np.dtype(np.int16))}


def whole_blocks(values):
    per_block = 32 // values.dtype.itemsize
    out = np.zeros(-(-max(len(values), 1) // per_block) * per_block, values.dtype)
    out[:len(values)] = values
    return out


def cast(pair, mode, src, dst, *, form="kCountForm", count=None, mask_len=0, mask_bits=0, repeat=0,
         strides=(1, 1, 8, 8), off=(0, 0), in_place=False):
    """Runs one Cast on the twin (the driver at -O0: small launches, the same results); returns the
    destination buffer as copied back."""
    src, dst = whole_blocks(src), whole_blocks(dst)
    p = np.zeros(SLOTS["kSlots"], np.int64)
    values = dict(kPair=PAIRS[pair], kMode=MODES.index(mode), kForm=FORMS[form],
                  kCount=len(src) if count is None else count, kMaskLen=mask_len, kMaskW0=mask_bits & 0xFFFFFFFF,
                  kMaskW1=mask_bits >> 32, kRepeat=repeat, kLenSrc=len(src), kLenDst=len(dst), kOffSrc=off[0],
                  kOffDst=off[1], kInPlace=int(in_place))
    values.update(zip(("kDstBlk", "kSrcBlk", "kDstRep", "kSrcRep"), strides))
    for key, value in values.items():
        p[SLOTS[key]] = value
    run_kernel(SOURCE, "cast_driver", [p.astype(np.uint32).view(np.int32), src, dst], optimize=False)
    return dst


# ---- the NumPy model ---------------------------------------------------------------------------

def round_float(x, dtype, mode):
    """float32 x rounded to the 16-bit float `dtype` with `mode`, bit-exactly."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        return _round_float(x, dtype, mode)


def _round_float(x, dtype, mode):
    nearest = x.astype(dtype)  # NumPy / ml_dtypes: round to nearest, ties to even
    if mode in ("CAST_NONE", "CAST_RINT"):
        return nearest
    exact = x.astype(np.float64)
    near64 = nearest.astype(np.float64)
    bits = nearest.view(np.uint16)
    lo_bits = np.where(near64 > exact, step(bits, up=False), bits)
    hi_bits = np.where(near64 < exact, step(bits, up=True), bits)
    lo, hi = lo_bits.view(dtype), hi_bits.view(dtype)
    lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
    # Past the largest finite value the next step would be 2^(emax+1): ties there round to inf.
    beyond = 65536.0 if dtype == F16 else 2.0 ** 128
    lo64 = np.where(np.isinf(lo64) & np.isfinite(exact), -beyond, lo64)
    hi64 = np.where(np.isinf(hi64) & np.isfinite(exact), beyond, hi64)
    if mode == "CAST_FLOOR":
        pick_hi = np.zeros(x.shape, bool)
    elif mode == "CAST_CEIL":
        pick_hi = np.ones(x.shape, bool)
    elif mode == "CAST_TRUNC":
        pick_hi = exact < 0
    elif mode == "CAST_ROUND":
        below, above = exact - lo64, hi64 - exact
        pick_hi = np.where(below == above, exact > 0, above < below)
    else:  # CAST_ODD: the neighbour with an odd last mantissa bit, when inexact
        pick_hi = (hi_bits & 1) == 1
    out = np.where(pick_hi, hi_bits, lo_bits)
    out = np.where((near64 == exact) | np.isnan(exact), bits, out)
    return out.astype(np.uint16).view(dtype)


def round_integral(x, mode):
    """float64 values rounded to integral values with `mode`."""
    x = np.asarray(x, np.float64)
    return {"CAST_RINT": np.rint, "CAST_NONE": np.rint, "CAST_FLOOR": np.floor, "CAST_CEIL": np.ceil,
            "CAST_TRUNC": np.trunc,
            "CAST_ROUND": lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v)}[mode](x)


def to_int32(x, mode):
    """Rounded, saturated to int32, NaN to 0 (the twin's documented assumption)."""
    v = round_integral(x, mode)
    v = np.where(np.isnan(v), 0, np.clip(v, -2.0**31, 2.0**31 - 1))
    return v.astype(np.int32)


def int32_to_float(i, mode):
    exact = i.astype(np.float64)
    nearest = i.astype(np.float32)
    if mode in ("CAST_NONE", "CAST_RINT"):
        return nearest
    n64 = nearest.astype(np.float64)
    lo = np.where(n64 > exact, np.nextafter(nearest, np.float32(-np.inf)), nearest)
    hi = np.where(n64 < exact, np.nextafter(nearest, np.float32(np.inf)), nearest)
    if mode == "CAST_FLOOR":
        return lo
    if mode == "CAST_CEIL":
        return hi
    if mode == "CAST_TRUNC":
        return np.where(exact < 0, hi, lo)
    below, above = exact - lo.astype(np.float64), hi.astype(np.float64) - exact
    return np.where(below == above, np.where(exact < 0, lo, hi), np.where(above < below, hi, lo))


def expected(pair, mode, src):
    s, d = PAIR_TYPES[pair]
    if d == F32 and s in (F16, BF16):
        return src.astype(np.float32)
    if d in (F16, BF16):
        return round_float(src, d, mode)
    if pair == "kFloatToFloat":
        return round_integral(src, mode).astype(np.float32)
    if d == I32:
        return to_int32(src.astype(np.float64), mode)
    return int32_to_float(src, mode)


# ---- value tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pair", ["kHalfToFloat", "kBf16ToFloat"])
def test_widening_is_exact_for_every_bit_pattern(pair):
    src_type = PAIR_TYPES[pair][0]
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(src_type)
    for chunk in np.split(patterns, 4):
        out = cast(pair, "CAST_NONE", chunk, np.zeros(len(chunk), np.float32))
        assert_same(out, chunk.astype(np.float32))


NARROWING = [("kFloatToHalf", m) for m in MODES] + [("kFloatToBf16", m) for m in DIRECTED]


@pytest.mark.parametrize("pair,mode", NARROWING)
def test_narrowing_modes_bit_exact(rng, pair, mode):
    target = PAIR_TYPES[pair][1]
    src = special_floats(rng, 400, target)
    out = cast(pair, mode, src, np.zeros(len(src), target), count=len(src))
    assert_same(out[:len(src)], round_float(src, target, mode))


INTEGRAL = ([("kFloatToFloat", m) for m in DIRECTED] + [("kFloatToInt32", m) for m in DIRECTED]
            + [("kHalfToInt32", m) for m in DIRECTED] + [("kInt32ToFloat", m) for m in ["CAST_NONE"] + DIRECTED])


@pytest.mark.parametrize("n", [3, 517])
@pytest.mark.parametrize("pair,mode", INTEGRAL)
def test_integral_conversions(rng, pair, mode, n):
    s, d = PAIR_TYPES[pair]
    if s == I32:
        src = rng.integers(-2**31, 2**31 - 1, n, endpoint=True).astype(np.int32)
        src[: min(n, 3)] = [16777217, -16777219, 2**31 - 1][: min(n, 3)]  # ties and the largest int
    else:
        src = (rng.standard_normal(n) * 1000).astype(np.float32)
        src[: min(n, 3)] = [2.5, -3.5, 3e9][: min(n, 3)]  # ties and saturation
        if n > 10:
            src[3:10] = [0.5, -0.5, 1.5, np.nan, np.inf, -np.inf, -3e9]
        with np.errstate(over="ignore"):
            src = src.astype(s)
    out = cast(pair, mode, src, np.zeros(n, d), count=n)
    assert_same(out[:n], expected(pair, mode, src))


@pytest.mark.parametrize("form", ["kMaskLenForm", "kMaskBitsForm"])
@pytest.mark.parametrize("pair,mode", [("kHalfToFloat", "CAST_NONE"), ("kFloatToHalf", "CAST_ROUND"),
                                       ("kFloatToBf16", "CAST_TRUNC"), ("kFloatToInt32", "CAST_FLOOR")])
def test_repeat_forms(rng, pair, mode, form):
    """Lanes per repeat follow the wider type (64 here); each operand strides in its own blocks."""
    s, d = PAIR_TYPES[pair]
    repeat, strides = 5, (2, 1, 17, 5)  # dstBlk, srcBlk, dstRep, srcRep
    src = (rng.standard_normal(repeat * 5 * 32 // s.itemsize + 64) * 100).astype(np.float32).astype(s)
    dst = (rng.standard_normal(repeat * 17 * 32 // d.itemsize + 128) * 100).astype(np.float32).astype(d)
    kw = dict(mask_len=int(rng.integers(1, 65))) if form == "kMaskLenForm" else \
        dict(mask_bits=int(rng.integers(1, 2**63)) * 2 + 1)
    out = cast(pair, mode, src, dst, form=form, repeat=repeat, strides=strides, **kw)
    r, l = active_lanes(64, repeat, mask_len=kw.get("mask_len"),
                        mask_bits=(kw["mask_bits"], 0) if "mask_bits" in kw else None)
    want = dst.copy()
    want[element_index(r, l, strides[0], strides[2], d.itemsize)] = \
        expected(pair, mode, src[element_index(r, l, strides[1], strides[3], s.itemsize)])
    assert_same(out[:len(dst)], want)


@pytest.mark.parametrize("n", [1008, 4000])
def test_in_place_widening_from_the_upper_half(rng, n):
    """16-bit data in the upper half of the float buffer, cast toward the front: no repeat reads what
    an earlier one wrote, so it is allowed (a repeat overlapping itself reads before it writes)."""
    src = (rng.standard_normal(n) * 3).astype(np.float16)
    out = cast("kHalfToFloat", "CAST_NONE", src, np.zeros(n, np.float32), count=n, in_place=True, off=(n, 0))
    assert_same(out, src.astype(np.float32))


def test_in_place_narrowing_to_the_front(rng):
    n = 1000
    src = (rng.standard_normal(n) * 3).astype(np.float32)
    out = cast("kFloatToHalf", "CAST_RINT", src, np.zeros(2 * n, np.float16), count=n, in_place=True)
    assert_same(out[:n], src.astype(np.float16))


RULES = {
    "cast_none_to_bf16": (dict(pair="kFloatToBf16", mode="CAST_NONE"), dict(pair="kFloatToBf16", mode="CAST_RINT"),
                          r"A2 allows CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC for float -> "
                          r"bfloat16_t \(got CAST_NONE\)"),
    "cast_odd_to_bf16": (dict(pair="kFloatToBf16", mode="CAST_ODD"), dict(pair="kFloatToHalf", mode="CAST_ODD"),
                         r"A2 allows .* for float -> bfloat16_t \(got CAST_ODD\)"),
    "rounding_a_widening": (dict(pair="kHalfToFloat", mode="CAST_RINT"), dict(pair="kHalfToFloat", mode="CAST_NONE"),
                            r"A2 allows CAST_NONE for half -> float \(got CAST_RINT\)"),
    "unsupported_pair": (dict(pair="kFloatToInt16", mode="CAST_RINT"), dict(pair="kFloatToInt32", mode="CAST_RINT"),
                         r"A2 \(as modelled by the twin\) has no Cast from float to int16_t"),
    "widening_onto_its_source": (dict(pair="kHalfToFloat", mode="CAST_NONE", in_place=True, off=(0, 0)),
                                 dict(pair="kHalfToFloat", mode="CAST_NONE", in_place=True, off=(256, 0)),
                                 "the src operand of repeat 1 reads what the dst operand of repeat 0 wrote"),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_rule(rng, rule):
    broken, fixed, text = RULES[rule]
    for kw, breaks in ((broken, True), (fixed, False)):
        kw = dict(kw)
        s, d = PAIR_TYPES[kw["pair"]]
        src = (rng.standard_normal(256) * 3).astype(np.float32).astype(s)
        args = (kw.pop("pair"), kw.pop("mode"), src, np.zeros(512, d))
        if breaks:
            with pytest.raises(TwinRuleError, match=rf"core 0: Cast: {text}"):
                cast(*args, count=256, **kw)
        else:
            out = cast(*args, count=256, **kw)
            assert_same(out[:256], expected(args[0], args[1], src))
