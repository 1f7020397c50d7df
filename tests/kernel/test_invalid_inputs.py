# SPDX-License-Identifier: BSD-3-Clause
"""Bad inputs get one sentence naming the tensor and the rule, from the C++ tiling (compute_tiling,
the code CANN's TilingFunc runs) and from the Python API (simulate) alike."""
import ml_dtypes
import numpy as np
import pytest

from rmsnorm_backward import _tiling
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.simulate import simulate

F16, F32, BF16 = np.float16, np.float32, ml_dtypes.bfloat16


def arrays(x_shape=(4, 8), gamma_shape=(8,), rstd_shape=(4, 1), dy_shape=None,
           dtype=F16, dy_dtype=None, gamma_dtype=None, rstd_dtype=F32):
    return (np.ones(dy_shape or x_shape, dy_dtype or dtype), np.ones(x_shape, dtype),
            np.ones(rstd_shape, rstd_dtype), np.ones(gamma_shape, gamma_dtype or dtype))


# (inputs, options, a regex the message must match: the tensor or option and its rule)
CASES = {
    "dy shape": (arrays(dy_shape=(4, 9)), {}, r"dy must have the shape of x \(dy \[4, 9\], x \[4, 8\]\)"),
    "dy dtype": (arrays(dy_dtype=F32), {}, r"dy must have the dtype of x \(dy float32, x float16\)"),
    "gamma dtype": (arrays(gamma_dtype=BF16), {}, r"gamma must have the dtype of x, or be float32 \(gamma bfloat16"),
    "gamma not trailing": (arrays(x_shape=(4, 8, 6), gamma_shape=(8,), rstd_shape=(4, 8, 1)), {},
                           r"gamma must equal the trailing 1 dims of x \(gamma \[8\], x \[4, 8, 6\]\)"),
    "gamma rank = x rank": (arrays(x_shape=(4, 8), gamma_shape=(4, 8), rstd_shape=(1,)), {},
                            r"gamma must have fewer dims than x"),
    "rstd size": (arrays(rstd_shape=(5, 1)), {}, r"rstd must hold one value per row of x, shaped \[4, 1\] or \[4\]"),
    "rstd dtype": (arrays(rstd_dtype=F16), {}, r"rstd must be float32 \(got float16\)"),
    "x integer": (arrays(dtype=np.int32), {}, r"x must be float16, float32 or bfloat16 \(got int32\)"),
    "x float64": (arrays(dtype=np.float64), {}, r"x must be float16, float32 or bfloat16 \(got float64\)"),
    "x rank 0": ((np.ones((), F16), np.ones((), F16), np.ones((), F32), np.ones((1,), F16)), {},
                 r"x must have rank 1 to 8 \(got rank 0\)"),
    "x rank 9": (arrays(x_shape=(1,) * 8 + (8,), rstd_shape=(1,) * 9), {}, r"x must have rank 1 to 8 \(got rank 9\)"),
    "gamma rank 0": ((np.ones((4, 8), F16), np.ones((4, 8), F16), np.ones((4, 8), F32), np.ones((), F16)), {},
                     r"gamma must have rank 1 to 8 \(got rank 0\)"),
    "soc": (arrays(), {"soc": "Ascend310P3"}, r"soc must be one of Ascend910B2, Ascend910B3, Ascend910_93 \(got Ascend310P3\)"),
    "block_dim": (arrays(), {"block_dim": 49}, r"block_dim must be at most the 48 vector cores of Ascend910B2"),
}


def tiling_kwargs(dy, x, rstd, gamma, soc="Ascend910B2", block_dim=0):
    names = ("dy", "x", "rstd", "gamma")
    kwargs = {f"{n}_shape": list(a.shape) for n, a in zip(names, (dy, x, rstd, gamma))}
    kwargs.update({f"{n}_dtype": a.dtype.name for n, a in zip(names, (dy, x, rstd, gamma))})
    return dict(kwargs, soc=soc, block_dim=block_dim)


@pytest.mark.parametrize("case", CASES)
def test_tiling_code_names_tensor_and_rule(case):
    inputs, options, message = CASES[case]
    with pytest.raises(InvalidInputError, match=message):
        _tiling.compute_tiling(**tiling_kwargs(*inputs, **options))


@pytest.mark.parametrize("case", CASES)
def test_python_api_names_tensor_and_rule(case):
    inputs, options, message = CASES[case]
    with pytest.raises(InvalidInputError, match=message):
        simulate(*inputs, **options)


def test_block_dim_must_be_positive():
    with pytest.raises(InvalidInputError, match=r"block_dim must be a positive integer or None \(got 0\)"):
        simulate(*arrays(), block_dim=0)


def test_valid_inputs_give_a_tiling():
    tiling = _tiling.compute_tiling(**tiling_kwargs(*arrays()))
    assert tiling["fields"]["rows"] == 4 and tiling["fields"]["cols"] == 8


@pytest.mark.parametrize("dres", [{"dres_shape": [4, 8]}, {"dres_dtype": "float16"}])
def test_dres_shape_and_dtype_come_together(dres):
    with pytest.raises(InvalidInputError, match=r"^dres_shape and dres_dtype go together: give both for the fused "
                                                r"residual form, or neither\.$"):
        _tiling.compute_tiling(**tiling_kwargs(*arrays()), **dres)
