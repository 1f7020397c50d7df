"""Inputs of a randomized case (test_randomized.py draws the cases): dy and x at the case's power-of-two
scale, gamma near 1 (or near 0 under a gamma_offset), rstd from x as a forward pass saves it, and dres
for the fused form."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

DTYPES = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}


def make_inputs(case):
    rng = np.random.default_rng(case["seed"])
    lead, gamma_shape, dtype = case["lead"], case["gamma_shape"], DTYPES[case["dtype"]]
    shape = lead + gamma_shape
    scale = 2.0 ** case["scale_exp"]
    x = (scale * rng.standard_normal(shape)).astype(dtype)
    dy = (scale * rng.standard_normal(shape)).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, gamma_shape).astype(dtype)
    offset, form = 0.0, case.get("form", "plain")
    if form == "offset":  # the scale gamma + offset still in [0.5, 1.5): Gemma's w near 0
        offset = float(rng.choice([1.0, -0.5, 2.0]))
        gamma = (rng.uniform(0.5, 1.5, gamma_shape) - offset).astype(dtype)
    if form == "float32 gamma":  # beside 16-bit data: mixed precision; beside float32 data: the plain form
        gamma = rng.uniform(0.5, 1.5, gamma_shape).astype(np.float32)
    dres = rng.standard_normal(shape).astype(dtype) if form.startswith("dres") else None
    if form.endswith("no gamma"):
        gamma = None
    rows, cols = math.prod(lead), math.prod(gamma_shape)
    mean_sq = np.square(x.astype(np.float64).reshape(rows, cols)).mean(axis=1)
    rstd = (1 / np.sqrt(mean_sq + 1e-6 * scale * scale)).astype(np.float32)
    rstd = rstd.reshape(lead + (1,) * len(gamma_shape) if case["rstd_keepdims"] else lead)
    return dy, x, rstd, gamma, scale, offset, dres
