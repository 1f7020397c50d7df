# SPDX-License-Identifier: BSD-3-Clause
"""The scalar number types of the twin (twin/include/twin/types.h), `half` and `bfloat16_t`, as kernel
code uses them: conversions from float (round to nearest even, overflow to inf, subnormals, NaN),
exact conversions to float, and arithmetic that rounds once per operation, against NumPy and
ml_dtypes."""
import ml_dtypes
import numpy as np
import pytest

from small_kernels import CTYPES, run
from float_bits import assert_same, special_floats

# GM: params {op, n}, x (float32), h1 and h2 (T), out (T, float32 or int32 by op: see OPS).
KERNEL = """
using T = ELEM;
extern "C" __global__ __aicore__ void types(GM_ADDR params, GM_ADDR x, GM_ADDR h1, GM_ADDR h2, GM_ADDR out)
{
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t *)params, 2);
    const int32_t op = p.GetValue(0), n = p.GetValue(1);
    GlobalTensor<float> xf, of;
    GlobalTensor<T> a, b, ot;
    GlobalTensor<int32_t> oi;
    xf.SetGlobalBuffer((__gm__ float *)x, n);
    a.SetGlobalBuffer((__gm__ T *)h1, n);
    b.SetGlobalBuffer((__gm__ T *)h2, n);
    ot.SetGlobalBuffer((__gm__ T *)out, n);
    of.SetGlobalBuffer((__gm__ float *)out, n);
    oi.SetGlobalBuffer((__gm__ int32_t *)out, n);
    for (int32_t i = 0; i < n; ++i) {
        switch (op) {
        case 0: ot.SetValue(i, T(xf.GetValue(i))); break;
        case 1: of.SetValue(i, static_cast<float>(a.GetValue(i))); break;
        case 2: ot.SetValue(i, a.GetValue(i) + b.GetValue(i)); break;
        case 3: ot.SetValue(i, a.GetValue(i) - b.GetValue(i)); break;
        case 4: ot.SetValue(i, a.GetValue(i) * b.GetValue(i)); break;
        case 5: ot.SetValue(i, a.GetValue(i) / b.GetValue(i)); break;
        case 6: { T t = a.GetValue(i); t += b.GetValue(i); t = T(static_cast<float>(t) * 2.0f); ot.SetValue(i, -t); break; }
        case 7: of.SetValue(i, static_cast<float>(a.GetValue(i)) * xf.GetValue(i)); break;
        case 8: oi.SetValue(i, (a.GetValue(i) < b.GetValue(i)) + 2 * (a.GetValue(i) == b.GetValue(i)) +
                               4 * (a.GetValue(i) >= T(1.0f))); break;
        case 9: ot.SetValue(i, T(static_cast<int32_t>(xf.GetValue(i)))); break;
        default: break;
        }
    }
}
"""
TYPES = [np.float16, ml_dtypes.bfloat16]


def launch(dtype, op, x=None, a=None, b=None, out_dtype=None):
    n = len(next(v for v in (x, a) if v is not None))
    x = np.zeros(n, np.float32) if x is None else x.astype(np.float32)
    a = np.zeros(n, dtype) if a is None else a.astype(dtype)
    b = np.zeros(n, dtype) if b is None else b.astype(dtype)
    out = np.zeros(n, out_dtype or dtype)
    run(KERNEL, "types", [np.array([op, n], np.int32), x, a, b, out], defines={"ELEM": CTYPES[np.dtype(dtype)]})
    return out


@pytest.mark.parametrize("dtype", TYPES)
def test_from_float_rounds_to_nearest_even(rng, dtype):
    x = special_floats(rng, 300, np.dtype(dtype))
    with np.errstate(over="ignore"):
        want = x.astype(dtype)
    assert_same(launch(dtype, 0, x=x), want)


@pytest.mark.parametrize("dtype", TYPES)
def test_to_float_is_exact_for_every_bit_pattern(dtype):
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dtype)
    assert_same(launch(dtype, 1, a=patterns, out_dtype=np.float32), patterns.astype(np.float32))


@pytest.mark.parametrize("op,ufunc", [(2, np.add), (3, np.subtract), (4, np.multiply), (5, np.divide)])
@pytest.mark.parametrize("dtype", TYPES)
def test_arithmetic_rounds_once_per_operation(rng, dtype, op, ufunc):
    a = (rng.standard_normal(999) * 300).astype(np.float32).astype(dtype)
    b = (rng.standard_normal(999) * 300).astype(np.float32).astype(dtype)
    b[:3] = [0, 1e-3, 200]  # a division by zero and results near the overflow and underflow edges
    with np.errstate(all="ignore"):
        want = ufunc(a, b).astype(dtype)
    assert_same(launch(dtype, op, a=a, b=b), want)


@pytest.mark.parametrize("dtype", TYPES)
def test_compound_assignment_and_negation(rng, dtype):
    a = (rng.standard_normal(257) * 5).astype(np.float32).astype(dtype)
    b = (rng.standard_normal(257) * 5).astype(np.float32).astype(dtype)
    want = -(((a + b).astype(dtype) * dtype(2.0)).astype(dtype))
    assert_same(launch(dtype, 6, a=a, b=b), want.astype(dtype))


@pytest.mark.parametrize("dtype", TYPES)
def test_mixed_with_float_is_float_arithmetic(rng, dtype):
    a = (rng.standard_normal(300)).astype(np.float32).astype(dtype)
    x = rng.standard_normal(300).astype(np.float32)
    assert_same(launch(dtype, 7, x=x, a=a, out_dtype=np.float32), a.astype(np.float32) * x)


@pytest.mark.parametrize("dtype", TYPES)
def test_comparisons_and_integer_construction(rng, dtype):
    a = (rng.standard_normal(300) * 2).astype(np.float32).astype(dtype)
    b = a.copy()
    b[::2] = (rng.standard_normal(150) * 2).astype(np.float32).astype(dtype)
    a[:2] = [np.nan, 1.0]
    want = ((a < b).astype(np.int32) + 2 * (a == b) + 4 * (a.astype(np.float32) >= 1.0)).astype(np.int32)
    np.testing.assert_array_equal(launch(dtype, 8, a=a, b=b, out_dtype=np.int32), want)
    x = rng.integers(-100000, 100000, 300).astype(np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(np.int32).astype(np.float32).astype(dtype)
    assert_same(launch(dtype, 9, x=x), want)

