# SPDX-License-Identifier: BSD-3-Clause
"""golden() against an independent derivation: central differences of the RmsNorm forward pass."""
import ml_dtypes
import numpy as np
import pytest

from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.golden import forward, golden

EPS = 1e-6


def numeric_grads(dy, x, gamma, h=1e-6):
    """d(sum(dy * y))/dx and /dgamma by central differences, rstd recomputed from x each time."""
    def loss(xv, gv):
        return float(np.sum(dy * forward(xv, gv, EPS)[0]))

    grads = []
    for arr in (x, gamma):
        grad = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[i] += h
            minus[i] -= h
            args_p = (plus, gamma) if arr is x else (x, plus)
            args_m = (minus, gamma) if arr is x else (x, minus)
            grad[i] = (loss(*args_p) - loss(*args_m)) / (2 * h)
        grads.append(grad)
    return grads


@pytest.mark.parametrize(("shape", "k"), [((3, 8), 1), ((2, 3, 5), 1), ((2, 3, 4), 2), ((1, 2, 3, 2), 3)])
def test_matches_the_derivative_of_the_forward_pass(shape, k):
    rng = np.random.default_rng(sum(shape) + k)
    x = rng.standard_normal(shape)
    dy = rng.standard_normal(shape)
    gamma = rng.uniform(0.5, 1.5, shape[-k:])
    _, rstd = forward(x, gamma, EPS)
    want_dx, want_dgamma = numeric_grads(dy, x, gamma)
    dx, dgamma = golden(dy, x, rstd, gamma)
    assert dx.shape == x.shape and dgamma.shape == gamma.shape
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dgamma, want_dgamma, rtol=1e-6, atol=1e-7)


def test_forward_hand_computed_row_keeps_gammas_dims_in_rstd():
    # x = [3, 4], epsilon = 0: mean(x^2) = 12.5, rstd = 1 / sqrt(12.5); y = x * rstd * [1, 2].
    y, rstd = forward(np.array([[3.0, 4.0]]), np.array([1.0, 2.0]), 0.0)
    assert rstd.shape == (1, 1)
    np.testing.assert_allclose(rstd, [[1 / np.sqrt(12.5)]], rtol=1e-15)
    np.testing.assert_allclose(y, [[3 / np.sqrt(12.5), 8 / np.sqrt(12.5)]], rtol=1e-15)
    with pytest.raises(InvalidInputError, match="last dims"):
        forward(np.ones((2, 3)), np.ones(2), 0.0)


def test_hand_computed_row():
    # x = [1, 3], rstd = 0.5: xh = [0.5, 1.5]; g = dy*gamma = [2, -1] * [1, 2] = [2, -2];
    # mean(g*xh) = (1 - 3)/2 = -1; dx = 0.5 * ([2, -2] + [0.5, 1.5]) = [1.25, -0.25];
    # dgamma = dy*xh = [1, -1.5].
    dx, dgamma = golden(np.array([[2.0, -1.0]]), np.array([[1.0, 3.0]]), np.array([[0.5]]), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(dx, [[1.25, -0.25]])
    np.testing.assert_array_equal(dgamma, [1.0, -1.5])


def test_both_rstd_shapes_agree_and_the_seed_example_shapes_work():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 64, 128)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    gamma = rng.standard_normal(128).astype(np.float32)
    rstd = rng.uniform(0.5, 2, (32, 64, 1)).astype(np.float32)
    dx1, dg1 = golden(dy, x, rstd, gamma)
    dx2, dg2 = golden(dy, x, rstd.reshape(32, 64), gamma)
    np.testing.assert_array_equal(dx1, dx2)
    np.testing.assert_array_equal(dg1, dg2)
    assert dx1.dtype == np.float64 and dg1.dtype == np.float64


def test_sixteen_bit_inputs_are_widened_exactly():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 16)).astype(ml_dtypes.bfloat16)
    dy = rng.standard_normal((4, 16)).astype(ml_dtypes.bfloat16)
    gamma = rng.standard_normal(16).astype(ml_dtypes.bfloat16)
    rstd = rng.uniform(0.5, 2, (4, 1)).astype(np.float32)
    got = golden(dy, x, rstd, gamma)
    want = golden(*(a.astype(np.float64) for a in (dy, x, rstd, gamma)))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_zero_rows_give_empty_dx_and_zero_dgamma():
    gamma = np.random.default_rng(13).standard_normal(64).astype(np.float16)
    dx, dgamma = golden(np.zeros((0, 64), np.float16), np.zeros((0, 64), np.float16), np.zeros((0, 1), np.float32), gamma)
    assert dx.shape == (0, 64)
    np.testing.assert_array_equal(dgamma, np.zeros(64))


def test_nan_and_inf_propagate_along_their_row_and_column():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 8))
    dy = rng.standard_normal((4, 8))
    x[1, 2] = np.nan
    dy[3, 5] = np.inf
    dx, dgamma = golden(dy, x, rng.uniform(0.5, 2, (4, 1)), rng.standard_normal(8))
    assert np.isnan(dx[1]).all()  # the row's mean is NaN
    assert np.isfinite(dx[[0, 2]]).all()
    assert np.isnan(dgamma[2]) and not np.isfinite(dgamma[5])
    assert np.isfinite(np.delete(dgamma, [2, 5])).all()


@pytest.mark.parametrize(("dy", "x", "rstd", "gamma", "message"), [
    ((4, 8), (4, 8), (4, 1), (4, 8), "gamma must have at least 1 and fewer dims than x"),
    ((4, 8), (4, 8), (4, 1), (), "gamma must have at least 1 and fewer dims than x"),
    ((4, 8), (4, 8), (4, 1), (7,), r"gamma's shape \(7,\) must equal the last 1 dims of x"),
    ((4, 9), (4, 8), (4, 1), (8,), r"dy's shape \(4, 9\) must equal x's shape"),
    ((4, 8), (4, 8), (8, 1), (8,), r"rstd's shape \(8, 1\) must be \(4, 1\) or \(4,\)"),
    ((2, 3, 8), (2, 3, 8), (6,), (8,), r"rstd's shape \(6,\) must be"),
])
def test_invalid_shapes_name_the_tensor_and_rule(dy, x, rstd, gamma, message):
    with pytest.raises(InvalidInputError, match=message):
        golden(np.ones(dy), np.ones(x), np.ones(rstd), np.ones(gamma))
