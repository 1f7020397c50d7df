# SPDX-License-Identifier: BSD-3-Clause
"""The one factory of the operator's random inputs, for every test that runs the kernel or the golden:
dy and x standard normal at a scale, rstd from x's rows as a forward pass saves it, gamma such that
the scale gamma + gamma_offset lies in [0.5, 1.5) (Gemma's w near 0 under an offset of 1), and
dres, the residual stream's gradient, for the fused form."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

DTYPES = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}
EPS = 1e-6  # of the forward pass that saved rstd, at scale 1


def make_inputs(rng, shape, gamma_dims=1, dtype="float16", rstd_keepdims=True, *, scale=1.0, gamma_offset=0.0,
                gamma_dtype=None, no_gamma=False):
    """(dy, x, rstd, gamma) for x of `shape` and `dtype` (an op_def name), gamma the last gamma_dims
    dims (gamma_dtype: another dtype for it, e.g. "float32" beside 16-bit x; no_gamma: None, the
    row still those dims), rstd shaped x.shape[:-k] + (1,)*k, or x.shape[:-k] without keepdims."""
    shape = tuple(shape)
    data = DTYPES[dtype]
    x = (scale * rng.standard_normal(shape)).astype(data)
    dy = (scale * rng.standard_normal(shape)).astype(data)
    lead, row = shape[:len(shape) - gamma_dims], shape[len(shape) - gamma_dims:]
    gamma = None if no_gamma else (rng.uniform(0.5, 1.5, row) - gamma_offset).astype(DTYPES[gamma_dtype or dtype])
    rows, cols = math.prod(lead), math.prod(row)
    mean_sq = np.square(x.astype(np.float64).reshape(rows, cols)).mean(axis=1) if rows else np.zeros(0)
    rstd = (1 / np.sqrt(mean_sq + EPS * scale * scale)).astype(np.float32)
    return dy, x, rstd.reshape(lead + (1,) * gamma_dims if rstd_keepdims else lead), gamma


def make_dres(rng, x, scale=1.0):
    """dres for x: the residual stream's gradient of the fused add + RMSNorm, x's shape and dtype."""
    return (scale * rng.standard_normal(x.shape)).astype(x.dtype)
