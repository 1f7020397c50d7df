# SPDX-License-Identifier: BSD-3-Clause
"""Launches twin/tests/vector_driver.cpp (one vector or reduction instruction per launch, chosen by
parameter slots) and models how the hardware addresses the lanes of a repeat, for the NumPy
references of test_vector.py and test_reduce.py. The driver compiles at -O0 (run_kernel's optimize):
its launches are small, and the twin's results do not depend on the level."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from ascendc_twin import run_kernel
from small_kernels import random_array

SOURCE = Path(__file__).with_name("vector_driver.cpp")
BLOCK = 32
REPEAT = 256
BUF_BYTES = 61440  # each of the three UB buffers: together inside the usable 188 KiB


def cpp_enum(source: Path, name: str) -> dict:
    """The enumerators of `enum <name>` in a C++ driver source, with their values (explicit or counted
    on from the previous one): how the tests name the cases a driver's switch dispatches on."""
    body = re.search(r"enum %s \{(.*?)\};" % name, source.read_text(), re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    values, nxt = {}, 0
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, _, value = (s.strip() for s in item.partition("="))
        nxt = int(value) if value else nxt
        values[key] = nxt
        nxt += 1
    return values


SLOTS = cpp_enum(SOURCE, "Slot")
OPS = cpp_enum(SOURCE, "Op")
DTYPES = {np.dtype(np.float16): 0, np.dtype(np.float32): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
          np.dtype(ml_dtypes.bfloat16): 4}
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]
SCALAR = ["Adds", "Muls", "Maxs", "Mins"]
UNARY = ["Exp", "Ln", "Sqrt", "Abs", "Reciprocal"]


def op_code(family: str, name: str = "") -> int:
    """The Op enumerator `family` (e.g. "kBinaryMaskLen") plus `name`'s index in its family."""
    for prefix, names in (("kBinary", BINARY), ("kScalar", SCALAR), ("kUnary", UNARY)):
        if family.startswith(prefix):
            return OPS[family] + names.index(name)
    return OPS[family]


def padded(values: np.ndarray) -> np.ndarray:
    """A copy of `values` grown to a whole number of 32-byte blocks (DataCopy moves whole blocks)."""
    per_block = BLOCK // values.dtype.itemsize
    out = np.zeros(-(-len(values) // per_block) * per_block, values.dtype)
    out[: len(values)] = values
    return out


def scalar_bits(value, dtype) -> int:
    """The bit pattern of `value` as `dtype`, in an int32 slot."""
    raw = np.array([value], dtype=dtype).view(np.uint8)
    return int(np.frombuffer(raw.tobytes().ljust(4, b"\0"), np.int32)[0])


def launch(op: int, dtype, a: np.ndarray, b=None, d=None, *, count=0, off=(0, 0, 0), mask_len=0, mask_bits=(0, 0),
           repeat=0, strides=(1, 1, 1, 8, 8, 8), scalar=0, defined_a=None, alias=0, buf_bytes=BUF_BYTES,
           order=0, with_stats=False):
    """Runs one instruction; returns the D buffer (d's length) as the kernel copied it back, and
    with_stats also the launch's counters. a, b, d are grown to whole blocks; only the first
    `defined_a` elements of A are written. order: the ReduceOrder (calIndex for ReduceMax / Min)."""
    dtype = np.dtype(dtype)
    a = padded(np.asarray(a, dtype))
    b = None if b is None else padded(np.asarray(b, dtype))
    d = padded(np.zeros(0, dtype) if d is None else np.asarray(d, dtype))
    p = np.zeros(SLOTS["kSlots"], np.int32)
    lo, hi = (int(m) & (2**64 - 1) for m in mask_bits)
    values = {
        "kOp": op, "kDtype": DTYPES[dtype], "kCount": count, "kOffA": off[0], "kOffB": off[1], "kOffD": off[2],
        "kMaskLen": mask_len, "kMaskW0": lo & 0xFFFFFFFF, "kMaskW1": lo >> 32, "kMaskW2": hi & 0xFFFFFFFF,
        "kMaskW3": hi >> 32, "kRepeat": repeat, "kScalar": scalar_bits(scalar, dtype),
        "kDefinedA": len(a) if defined_a is None else defined_a, "kLenB": 0 if b is None else len(b),
        "kLenD": len(d), "kAlias": alias, "kBufBytes": buf_bytes, "kOrder": order,
    }
    for key, value in zip(("kDstBlk", "kSrc0Blk", "kSrc1Blk", "kDstRep", "kSrc0Rep", "kSrc1Rep"), strides):
        values[key] = value
    for key, value in values.items():
        p[SLOTS[key]] = np.array(value).astype(np.int64).astype(np.uint32).view(np.int32)
    stats = run_kernel(SOURCE, "vector_driver", [p, a, b, d], optimize=False)
    return (d, stats) if with_stats else d


def active_lanes(lanes: int, repeats: int, mask_bits=None, mask_len=None, count=None):
    """(repeat, lane) of every lane that runs, in issue order: Normal mode (bit mask or the first
    mask_len lanes of each repeat) or Counter mode (the first `count` lanes, repeat after repeat)."""
    if count is not None:
        idx = np.arange(count)
        return idx // lanes, idx % lanes
    if mask_bits is None:
        mask_bits = ((1 << mask_len) - 1) & (2**64 - 1), ((1 << mask_len) - 1) >> 64
    on = [l for l in range(lanes) if (int(mask_bits[l // 64]) >> (l % 64)) & 1]
    r = np.repeat(np.arange(repeats), len(on))
    return r, np.tile(np.array(on, dtype=np.int64), repeats)


def element_index(r, lane, blk: int, rep: int, itemsize: int):
    """The element index (from the operand's start) of lane `lane` of repeat `r`."""
    byte = r * rep * BLOCK + (lane * itemsize // BLOCK) * blk * BLOCK + lane * itemsize % BLOCK
    return byte // itemsize


def mask_from_bits(rng: np.random.Generator, lanes: int):
    """A random non-empty bit mask for `lanes` lanes (2 x 64-bit words)."""
    bits = [int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2)) for _ in range(2)]
    if lanes <= 64:
        bits[1] = 0
    return bits[0] | 1, bits[1]


def broken_then_fixed(rng, call: str, rule: str, broken: dict, fixed: dict):
    """Launches `broken`, which must fail naming core 0, `call` and `rule` (a regex), then `fixed`,
    which must run. Each is launch()'s keyword arguments plus op=(Op family[, name]) and dtype;
    a, b and d are random and fill the UB buffers."""
    for kw, breaks in ((broken, True), (fixed, False)):
        kw = dict(kw)
        op, dtype = op_code(*kw.pop("op")), np.dtype(kw.pop("dtype"))
        a, b, d = (random_array(rng, BUF_BYTES // dtype.itemsize, dtype) for _ in range(3))
        if breaks:
            with pytest.raises(TwinRuleError, match=rf"core 0: {call}: {rule}"):
                launch(op, dtype, a, b, d, **kw)
        else:
            launch(op, dtype, a, b, d, **kw)


def tree(values, present):
    """Binary-tree sums along the last axis (a power of two) of `values` where `present`; returns
    (sums, any lane present). Every addition rounds to the dtype, as NumPy's 16-bit adds do."""
    v, p = values.copy(), present.copy()
    while v.shape[-1] > 1:
        a, b, pa, pb = v[..., 0::2], v[..., 1::2], p[..., 0::2], p[..., 1::2]
        v = np.where(pa & pb, a + b, np.where(pa, a, b))
        p = pa | pb
    return v[..., 0], p[..., 0]


def gather(src, lanes, repeats, mask_bits=None, mask_len=None, count=None, blk=1, rep=8):
    """(repeats, lanes) values of every repeat as addressed by the strides, and which lanes run."""
    size = src.dtype.itemsize
    grid_r, grid_l = np.meshgrid(np.arange(repeats), np.arange(lanes), indexing="ij")
    present = np.zeros((repeats, lanes), bool)
    r, l = active_lanes(lanes, repeats, mask_bits=mask_bits, mask_len=mask_len, count=count)
    present[r, l] = True
    values = np.zeros((repeats, lanes), src.dtype)
    values[present] = src[element_index(grid_r, grid_l, blk, rep, size)[present]]
    return values, present


