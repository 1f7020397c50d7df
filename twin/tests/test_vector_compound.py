# SPDX-License-Identifier: BSD-3-Clause
"""Compound vector instructions of the twin (twin/include/twin/vector_compound.h) against NumPy:
Axpy and MulAddDst with their real two-type signatures (half -> half, float -> float, half -> float),
AddRelu and LeakyRelu; then their dtype and overlap rules."""
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


@pytest.mark.parametrize("n", [64, 320, 2048])
def test_mul_add_dst_half_sources_into_float(rng, n):
    """dst = float(src0)*float(src1) + dst: the product of two halves is exact in float, the sum rounded
    once."""
    a, b = random_array(rng, n, np.float16), random_array(rng, n, np.float16)
    acc = random_array(rng, n, np.float32)
    out = run_elementwise("MulAddDst(d, x, y, N)", a, b, acc.copy())
    np.testing.assert_array_equal(out, a.astype(np.float32) * b.astype(np.float32) + acc)


def test_mul_add_dst_half_sources_repeat_form_takes_float_lanes(rng):
    """A repeat covers 64 lanes (the float destination's), reading 4 blocks of each half source."""
    n, lanes = 256, 40
    a, b = random_array(rng, n, np.float16), random_array(rng, n, np.float16)
    acc = random_array(rng, n, np.float32)
    out = run_elementwise(f"MulAddDst(d, x, y, uint64_t({lanes}), 4, {{1, 1, 1, 8, 4, 4}})", a, b, acc.copy())
    expected = acc.copy()
    on = (np.arange(n) % 64) < lanes
    expected[on] = (a.astype(np.float32) * b.astype(np.float32) + acc)[on]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("call,rule", [
    ("MulAddDst(d, d.ReinterpretCast<half>(), y, N)", "the src0 operand \\(half\\) overlaps the dst operand"),
    ("MulAddDst(d, x, d.ReinterpretCast<half>()[N], N)", "the src1 operand \\(half\\) overlaps the dst operand"),
    ("Axpy(d, d.ReinterpretCast<half>(), x.GetValue(0), N)", "Axpy: the src operand \\(half\\) overlaps the dst operand"),
])
def test_half_sources_must_not_overlap_float_dst(rng, call, rule):
    a = random_array(rng, 64, np.float16)
    with pytest.raises(TwinRuleError, match=rule):
        run_elementwise(call, a, a.copy(), np.zeros(64, np.float32))


@pytest.mark.parametrize("call", ["MulAddDst(d, x, m.ReinterpretCast<half>(), 16)",
                                  "Axpy(d, m.ReinterpretCast<half>(), x.GetValue(0), 16)"])
def test_half_sources_nothing_wrote_leave_the_float_lanes_undefined(rng, call):
    """m (no mask given) is UB nothing wrote: the 16 float lanes computed from it are undefined and may
    not reach GM."""
    a = random_array(rng, 64, np.float16)
    with pytest.raises(TwinRuleError, match="holds undefined data after the launch: element 0"):
        run_elementwise(call, a, a.copy(), np.zeros(64, np.float32))


def test_mul_add_dst_float_sources_into_half_is_rejected(rng):
    a = random_array(rng, 64, np.float32)
    with pytest.raises(TwinRuleError, match="MulAddDst: A2 supports src/dst half/half, float/float and half/float"):
        run_elementwise("MulAddDst(d, x, y, N)", a, a.copy(), np.zeros(64, np.float16))


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
