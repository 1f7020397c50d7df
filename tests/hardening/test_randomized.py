# SPDX-License-Identifier: BSD-3-Clause
"""Randomized cases (hypothesis): any shape with 1-4 leading dims and a 1-3-dim gamma of 1 to 20000
cols, every dtype and SoC, both rstd shapes, values from 1e-4 to 1e3, and every form of the operator
(plain, gamma_offset with a gamma near 0, no gamma, dres with and without gamma, float32 gamma beside
16-bit data), through the kernel
on the twin (every rule check is always on) against the float64 golden by the precision standard.

1000 cases by default (elements capped at 32K per case so the suite stays within the CI budget);
RMSNORM_HYPOTHESIS_CASES=<n> runs n. A failure prints hypothesis' falsifying example.

Scale: dy and x are drawn at the same power-of-two scale s = 2^e (2^-13 ~ 1.2e-4 to 2^10 ~ 1e3),
gamma near 1 and rstd from x as a forward pass saves it, so dx = rstd * (...) is O(1) while dgamma
(a sum over rows of dy * xhat) grows with s. The standard's atol (1e-4 for fp32) is absolute, and an
fp32 sum of s-sized terms carries rounding of order s * 2^-24 per term whatever the kernel does, so
dgamma is compared in units of s: dgamma / s against golden / s. Dividing by a power of two is exact,
so this is the standard applied at the data's own scale, not a looser tolerance.
"""
from __future__ import annotations

import math
import os

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ascendc_twin import soc_table
from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare
from rmsnorm_backward.simulate import simulate

from operator_inputs import DTYPES
from random_inputs import case_inputs

CASES = int(os.environ.get("RMSNORM_HYPOTHESIS_CASES", "1000"))
MAX_COLS = 20000
MAX_ELEMENTS = 1 << 15
SOCS = [row["name"] for row in soc_table()]


@st.composite
def dims_up_to(draw, count: int, limit: int, first) -> tuple[int, ...]:
    """`count` dims whose product stays at most `limit`, the first drawn by `first(limit)`."""
    dims = []
    for i in range(count):
        d = draw(first(limit) if i == 0 else st.integers(1, limit))
        dims.append(d)
        limit //= d
    return tuple(dims)


def spread_cols(limit):  # about as many small-cols, rows-in-UB and long-rows cases
    return st.one_of(st.integers(1, min(limit, 128)), st.integers(1, min(limit, 4096)), st.integers(1, limit))


def many_rows(limit):  # often as many rows as fit: several dgamma groups on several cores
    return st.one_of(st.integers(1, limit), st.just(limit))


@st.composite
def cases(draw):
    gamma_shape = draw(st.integers(1, 3).flatmap(lambda k: dims_up_to(k, MAX_COLS, spread_cols)))
    cols = math.prod(gamma_shape)
    lead = draw(st.integers(1, 4).flatmap(lambda n: dims_up_to(n, max(1, MAX_ELEMENTS // cols), many_rows)))
    if draw(st.integers(0, 31)) == 0:  # now and then no rows at all
        lead = (0,) + lead[1:]
    return {
        "lead": lead,
        "gamma_shape": gamma_shape,
        "dtype": draw(st.sampled_from(sorted(DTYPES))),
        "soc": draw(st.sampled_from(SOCS)),
        "rstd_keepdims": draw(st.booleans()),
        "scale_exp": draw(st.integers(-13, 10)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "form": draw(st.sampled_from(FORMS)),
    }


# Half the cases plain, the rest spread over the other forms.
FORMS = ("plain", "plain", "plain", "plain", "offset", "no gamma", "dres", "dres, no gamma", "float32 gamma")


@settings(max_examples=CASES, deadline=None, database=None)
@given(case=cases())
def test_random_case_meets_the_precision_standard(case):
    dy, x, rstd, gamma, scale, offset, dres = case_inputs(case)
    dx, dgamma, stats = simulate(dy, x, rstd, gamma, dres, gamma_offset=offset, soc=case["soc"])
    event(f"path {stats['path']}, {'several' if stats['groups'] > 1 else 'one'} dgamma group(s)")
    event(f"cols up to 10^{math.ceil(math.log10(stats['cols'] + 1))}, rows {'0' if x.size == 0 else '> 0'}")
    event(f"form {case['form']}")
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma, offset, dres)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    assert dgamma.shape == ((0,) if gamma is None else gamma.shape) and dgamma.dtype == np.float32
    dx_report = compare(dx, golden_dx, case["dtype"])
    assert dx_report.passed, f"dx on {stats['path']}: {dx_report}"
    dgamma_report = compare(dgamma / np.float32(scale), golden_dgamma / scale, "float32", round_golden=False)
    assert dgamma_report.passed, f"dgamma / {scale:g} on {stats['path']}: {dgamma_report}"
