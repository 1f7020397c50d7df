# SPDX-License-Identifier: BSD-3-Clause
"""Float bit patterns for the twin's number tests: the neighbour of a 16-bit pattern, float32 values
that stress rounding, values with many ties, and the one bit-for-bit comparison (assert_same)."""
import numpy as np


def step(bits, up):
    """The next 16-bit float pattern above (up) or below a pattern, in value order."""
    bits = bits.astype(np.int32)
    neg = (bits & 0x8000) != 0
    mag = bits & 0x7FFF
    if up:
        out = np.where(neg, np.where(mag == 0, 0x0001, bits - 1), bits + 1)
    else:
        out = np.where(neg, bits + 1, np.where(mag == 0, 0x8001, bits - 1))
    return out.astype(np.uint16)


def special_floats(rng, n, target):
    """float32 values that stress rounding to `target`: random normals, exact ties between neighbours,
    the overflow edge, the subnormal range, signed zeros, Inf and NaN."""
    normals = (rng.standard_normal(n) * 10).astype(np.float32)
    t = normals.astype(target)
    up = step(t.view(np.uint16), up=True).view(target)
    ties = ((t.astype(np.float64) + up.astype(np.float64)) / 2).astype(np.float32)
    big = float(np.finfo(target).max)
    edge = rng.uniform(big * 0.999, min(big * 1.002, 3.4e38), n).astype(np.float32)
    tiny = (rng.uniform(-1, 1, n) * float(np.finfo(target).smallest_normal) * 2).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, 65520.0, -65520.0], np.float32)
    return np.concatenate([normals, ties, edge, tiny, specials]).astype(np.float32)


def assert_same(actual, want, *, exact_nan: bool = False):
    """Equal bit for bit (the one bit comparison of the twin's tests); a NaN matches any NaN unless
    exact_nan, where its payload must match too. Integers compare by value."""
    a, w = np.asarray(actual), np.asarray(want)
    assert a.dtype == w.dtype
    if a.dtype.kind in "iub":
        np.testing.assert_array_equal(a, w)
        return
    nan = np.zeros(a.shape, bool) if exact_nan else np.isnan(a.astype(np.float32)) & np.isnan(w.astype(np.float32))
    raw = np.uint16 if a.itemsize == 2 else np.uint32
    bad = ~nan & (a.view(raw) != w.view(raw))
    assert not bad.any(), f"{bad.sum()} differ; first: in {np.flatnonzero(bad)[:4]} got {a[bad][:4]} want {w[bad][:4]}"


def with_ties(rng, n, dtype, spread: int):
    """Random integers in [-spread, spread] as `dtype`: few values, so that most groups hold their
    extreme (or a score) more than once."""
    return rng.integers(-spread, spread + 1, n).astype(dtype)
