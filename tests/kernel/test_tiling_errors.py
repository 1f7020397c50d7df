# SPDX-License-Identifier: BSD-3-Clause
"""The tiling's errors are typed: each broken rule raises TilingError (an InvalidInputError) saying
what the rule is about (kind), the tensor or attribute it names, and one sentence naming it."""
from __future__ import annotations

import pytest

from rmsnorm_backward import _tiling
from rmsnorm_backward.errors import InvalidInputError, TilingError

GOOD = dict(dy_shape=[4, 64], x_shape=[4, 64], rstd_shape=[4, 1], gamma_shape=[64], dy_dtype="float16",
            x_dtype="float16", rstd_dtype="float32", gamma_dtype="float16")


@pytest.mark.parametrize("change, kind, tensor", [
    (dict(dy_shape=[4, 65]), "shape", "dy"),
    (dict(x_shape=[4, 65], dy_shape=[4, 65]), "shape", "gamma"),
    (dict(rstd_shape=[5, 1]), "shape", "rstd"),
    (dict(x_shape=[-1, 64], dy_shape=[-1, 64]), "shape", "x"),
    (dict(x_dtype="int8", dy_dtype="int8"), "dtype", "x"),
    (dict(dy_dtype="float32"), "dtype", "dy"),
    (dict(gamma_dtype="bfloat16"), "dtype", "gamma"),
    (dict(rstd_dtype="float16"), "dtype", "rstd"),
    (dict(dres_shape=[4, 64], dres_dtype="float32"), "dtype", "dres"),
    (dict(dres_shape=[4, 63], dres_dtype="float16"), "shape", "dres"),
    (dict(gamma_shape=None, gamma_offset=1.0), "attr", "gamma_offset"),
    (dict(block_dim=49), "attr", "block_dim"),
    (dict(soc="Ascend310P"), "platform", "soc"),
])
def test_each_rule_names_its_kind_and_tensor(change, kind, tensor):
    with pytest.raises(TilingError) as caught:
        _tiling.compute_tiling(**{**GOOD, **change})
    error = caught.value
    assert isinstance(error, InvalidInputError)
    assert (error.kind, error.tensor) == (kind, tensor)
    assert str(error).startswith(tensor) or tensor in str(error).split(" must ")[0]


@pytest.mark.parametrize("change, kind, tensor", [
    (dict(dx_shape=[4, 63]), "shape", "dx"),
    (dict(dx_dtype="float32"), "dtype", "dx"),
    (dict(dgamma_shape=[65]), "shape", "dgamma"),
    (dict(dgamma_dtype="float16"), "dtype", "dgamma"),
])
def test_the_output_rules_are_typed_too(change, kind, tensor):
    outputs = dict(x_shape=[4, 64], x_dtype="float16", gamma_shape=[64], dx_shape=[4, 64], dx_dtype="float16",
                   dgamma_shape=[64], dgamma_dtype="float32")
    _tiling.check_outputs(**outputs)
    with pytest.raises(TilingError) as caught:
        _tiling.check_outputs(**{**outputs, **change})
    assert (caught.value.kind, caught.value.tensor) == (kind, tensor)
