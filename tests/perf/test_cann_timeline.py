# SPDX-License-Identifier: BSD-3-Clause
"""CANN's own RmsNormGrad (perf.cann: ops-nn's kernel and tiling, unchanged) on the twin's pipeline
timeline: the barriers and scalar handovers of its row-at-a-time split-N schedule are counted and
cost time, and independent phases let its cores borrow the HBM pool without beating the pool's floor.
Skips without the fetched CANN sources."""
from __future__ import annotations

import numpy as np
import pytest

from ascendc_twin import model_constants
from rmsnorm_backward.perf import cann, load_model, measured
from rmsnorm_backward.perf.model import pool_cycles

from operator_inputs import make_inputs

pytestmark = pytest.mark.skipif(cann.missing() is not None, reason=cann.missing() or "")


def busiest(stats: dict) -> int:
    return max(c["model_cycles"] for c in stats["cores"])


def test_split_n_waits_for_the_scalar_unit_every_row(rng):
    # Above small-D, CANN's split-N kernel computes one row at a time. At 5120 columns of fp16 each
    # row has 17 vector barriers (after the two widening casts, four of the product passes, the halving
    # sum's 5120 -> 4096 fold and its six halvings down to 64, the three final passes and the
    # narrowing cast) and 4 flag handovers with the scalar unit (rstd read into a scalar and handed
    # back, the mean handed to the vector unit, the sum read out), each counted once by the twin. A
    # second row per core (48 cores, 48 then 96 rows) adds exactly that.
    one, two = (cann.run(*make_inputs(rng, (rows, 5120), 1, "float16", rstd_keepdims=False))[2] for rows in (48, 96))
    assert one["path"] == two["path"] == "split_n" and one["block_dim"] == two["block_dim"] == 48
    assert two["total"]["pipe_barriers"] - one["total"]["pipe_barriers"] == (17 + 4) * 48


@pytest.mark.parametrize("constant, changed", [("pipe_barrier_cycles", 40.0), ("flag_sync_cycles", 80.0)])
def test_barriers_and_handovers_cost_the_anchor_per_row(rng, constant, changed):
    # Dearer barriers and handovers slow CANN's rows (a dozen barriers and several handovers each),
    # and leave its results alone.
    args = make_inputs(rng, (96, 1000), 1, "float32", rstd_keepdims=False)
    dx, dgamma, base = cann.run(*args, deterministic=True)
    with model_constants({constant: changed}):
        dx2, dgamma2, slow = cann.run(*args, deterministic=True)
    np.testing.assert_array_equal(dx, dx2)
    np.testing.assert_array_equal(dgamma, dgamma2)
    assert busiest(slow) > busiest(base) * 1.05


def test_independent_phases_let_the_row_at_a_time_anchor_borrow_the_pool(rng):
    # CANN's cores mostly compute: with independent phases each draws more than 1/48 of the pool
    # while it copies, so it finishes sooner; the launch still moves no faster than the pool allows.
    model = load_model("Ascend910B2")
    args = make_inputs(rng, (480, 4096), 1, "float32", rstd_keepdims=False)
    step = cann.run(*args)[2]
    with model_constants({"hbm_phase_overlap": 1.0}):
        free = cann.run(*args)[2]
    assert busiest(free) < 0.95 * busiest(step)
    assert measured(free["cores"], model).modelled_us >= model.cycles_to_us(pool_cycles(free["cores"], model))
