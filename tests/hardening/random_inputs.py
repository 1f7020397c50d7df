# SPDX-License-Identifier: BSD-3-Clause
"""Inputs of a randomized case (test_randomized.py draws the cases), made by the one input factory
(operator_inputs.make_inputs): dy and x at the case's power-of-two scale, its form's gamma (near 1, near
1 - gamma_offset, float32 beside 16-bit data, or none) and dres for the fused form."""
from __future__ import annotations

import numpy as np

from operator_inputs import make_dres, make_inputs


def case_inputs(case):
    """(dy, x, rstd, gamma, scale, gamma_offset, dres) of a case dict."""
    rng = np.random.default_rng(case["seed"])
    form, scale = case.get("form", "plain"), 2.0 ** case["scale_exp"]
    gamma_offset = float(rng.choice([1.0, -0.5, 2.0])) if form == "offset" else 0.0
    dy, x, rstd, gamma = make_inputs(rng, case["lead"] + case["gamma_shape"], len(case["gamma_shape"]), case["dtype"],
                                     case["rstd_keepdims"], scale=scale, gamma_offset=gamma_offset,
                                     gamma_dtype="float32" if form == "float32 gamma" else None,
                                     no_gamma=form.endswith("no gamma"))
    dres = make_dres(rng, x) if form.startswith("dres") else None
    return dy, x, rstd, gamma, scale, gamma_offset, dres
