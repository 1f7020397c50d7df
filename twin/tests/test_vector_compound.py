# SPDX-License-Identifier: BSD-3-Clause
"""Compound vector instructions of the twin (twin/include/twin/vector_compound.h) against NumPy:
Axpy with its real two-type signature (half -> half, float -> float, half -> float), AddRelu and
LeakyRelu; then their dtype rules."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import random_array, run_elementwise


@pytest.mark.parametrize("n", [64, 320, 2048])
@pytest.mark.parametrize("src,dst", [(np.float16, np.float16), (np.float32, np.float32), (np.float16, np.float32)])
def test_axpy_two_types(rng, src, dst, n):
    a = random_array(rng, n, src)
    s = np.full(n, rng.standard_normal(), dtype=src)
    acc = random_array(rng, n, dst)
    out = run_elementwise(f"Axpy(d, x, y.GetValue(0), N)", a, s, acc.copy())
    if src == dst:  # the product rounded to the type, then the sum
        expected = ((a * s[0]).astype(dst) + acc).astype(dst)
    else:  # a half source into a float destination computes in float
        expected = a.astype(np.float32) * np.float32(s[0]) + acc
    np.testing.assert_array_equal(out, expected)


def test_axpy_explicit_template_arguments(rng):
    a = random_array(rng, 128, np.float16)
    s = np.full(128, 0.5, dtype=np.float16)
    acc = random_array(rng, 128, np.float16)
    out = run_elementwise("Axpy<half, half>(d, x, y.GetValue(0), N)", a, s, acc.copy())
    np.testing.assert_array_equal(out, ((a * s[0]).astype(np.float16) + acc).astype(np.float16))


def test_axpy_float_source_into_half_is_rejected(rng):
    a = random_array(rng, 64, np.float32)
    with pytest.raises(TwinRuleError, match="A2 supports src/dst half/half, float/float and half/float"):
        run_elementwise("Axpy(d, x, y.GetValue(0), N)", a, a.copy(), np.zeros(64, np.float16))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int16])
def test_add_relu(rng, dtype):
    n = 512
    if dtype == np.int16:  # sums inside int16: what an overflowing sum gives is not documented
        a, b = (rng.integers(-9999, 9999, n).astype(dtype) for _ in range(2))
    else:
        a, b = random_array(rng, n, dtype), random_array(rng, n, dtype)
    out = run_elementwise("AddRelu(d, x, y, N)", a, b, np.zeros(n, dtype))
    np.testing.assert_array_equal(out, np.maximum((a + b).astype(dtype), 0).astype(dtype))  # rounded, then ReLU


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_leaky_relu_repeat_form(rng, dtype):
    lanes = 256 // np.dtype(dtype).itemsize
    n = 4 * lanes
    a = random_array(rng, n, dtype)
    alpha = np.full(n, 0.125, dtype=dtype)
    mask = int(rng.integers(1, lanes + 1))
    before = random_array(rng, n, dtype)
    out = run_elementwise(f"LeakyRelu(d, x, y.GetValue(0), uint64_t({mask}), 4, {{1, 1, 8, 8}})", a, alpha,
                          before.copy())
    expected = before.copy()
    on = (np.arange(n) % lanes) < mask
    expected[on] = np.where(a >= 0, a, (a * alpha[0]).astype(dtype))[on]
    np.testing.assert_array_equal(out, expected)


def test_add_relu_rejects_int32(rng):
    a = random_array(rng, 64, np.int32)
    with pytest.raises(TwinRuleError, match="A2 supports half, float and int16_t for this instruction"):
        run_elementwise("AddRelu(d, x, y, N)", a, a.copy(), np.zeros(64, np.int32))
