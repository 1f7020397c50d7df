# SPDX-License-Identifier: BSD-3-Clause
"""The anchor kernel (benchmarks/anchor/: a model of ops-nn's A2 RmsNormGrad schedule, ANCHOR.md) on the
twin with every rule on: its golden check per path and dtype in both dgamma modes, deterministic
dgamma bitwise the same run to run, its tiling's formulas, and the schedule's traits the twin counts."""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from rmsnorm_backward import resources
from rmsnorm_backward.golden import golden
from rmsnorm_backward.perf.anchor import host
from rmsnorm_backward.precision import compare
from rmsnorm_backward.op_def import dtype_of

from operator_inputs import make_inputs

# One shape per path (and the features each path has: several tiles per core, a batch of more than
# 255 rows, a split-D tail chunk, unaligned widths), each small enough to run in well under a second.
CASES = [
    ("split_n", (5000, 128)),     # small-D: 56-row tiles, two per core
    ("split_n", (13000, 16)),     # small-D: 271 rows in one tile, two batches of repeats
    ("split_n", (97, 5120)),      # rows not a multiple of the cores: a shorter last core
    ("split_n", (100, 1000)),     # not a whole repeat, so the halving sum folds a tail
    ("split_d", (40, 12300)),     # chunks of 4096 and a tail of 12
    ("split_d", (70, 7168)),      # a 32-row group and a tail group on one core
]


def inputs(rng, shape, dtype):
    return make_inputs(rng, shape, 1, dtype_of(dtype).name, rstd_keepdims=False)


# Every dtype with atomic dgamma; the deterministic mode's final sum does not depend on the dtype.
MODES = [("fp32", False), ("fp16", False), ("bf16", False), ("fp16", True)]


@pytest.mark.parametrize("dtype, deterministic", MODES, ids=[f"{d}-{'det' if m else 'atomic'}" for d, m in MODES])
@pytest.mark.parametrize("path, shape", CASES, ids=[f"{p}-{s[0]}x{s[1]}" for p, s in CASES])
def test_anchor_matches_the_golden(rng, path, shape, dtype, deterministic):
    dy, x, rstd, gamma = inputs(rng, shape, dtype)
    assert host.tiling(*shape, x.dtype.name, deterministic=deterministic).path == path
    dx, dgamma, _ = host.run_anchor(dy, x, rstd, gamma, deterministic=deterministic)
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma)
    dx_report = compare(dx, golden_dx, x.dtype.name)
    # CANN's schedule adds dgamma row after row in fp32, and that rounding grows with the partial
    # sums, about sqrt(rows) for these random terms: dgamma is compared in units of that (a power of
    # two, so the division is exact), the standard at the sum's own scale as in test_randomized.py.
    # A lost or doubled row still misses by about 1 / unit, far past the standard's 1e-4.
    unit = 2.0 ** math.ceil(math.log2(math.sqrt(shape[0])))
    dgamma_report = compare(dgamma / np.float32(unit), golden_dgamma / unit, "float32", round_golden=False)
    assert dx_report.passed, str(dx_report)
    assert dgamma_report.passed, f"dgamma / {unit:g}: {dgamma_report}"


@pytest.mark.parametrize("path, shape", [CASES[0], CASES[2], CASES[4]], ids=["small_d", "split_n", "split_d"])
def test_deterministic_dgamma_is_bitwise_the_same_run_to_run(rng, path, shape):
    dy, x, rstd, gamma = inputs(rng, shape, "fp32")
    first = host.run_anchor(dy, x, rstd, gamma, deterministic=True, seed=1)
    second = host.run_anchor(dy, x, rstd, gamma, deterministic=True, seed=2)  # another atomic-add order
    assert np.array_equal(first[1].view(np.uint32), second[1].view(np.uint32))
    assert np.array_equal(first[0].view(np.uint32), second[0].view(np.uint32))


@pytest.mark.parametrize("cols, dtype, path", [
    (40, "float16", "split_n"), (5120, "float32", "split_n"), (5860, "bfloat16", "split_n"),
    (6081, "float32", "split_d"), (16384, "float16", "split_d"),
])
def test_tiling_picks_the_schedule_path(cols, dtype, path):
    assert host.tiling(4096, cols, dtype, deterministic=False).path == path


@pytest.mark.parametrize("rows, block_factor, block_dim", [(97, 3, 33), (48, 1, 48), (1000, 21, 48), (5, 1, 5)])
def test_rows_split_as_ceil_rows_over_ceil_rows_per_core(rows, block_factor, block_dim):
    plan = host.tiling(rows, 1000, "float32", deterministic=False)
    assert (plan.block_factor, plan.block_dim) == (block_factor, block_dim) == (-(-rows // 48), -(-rows // block_factor))


@pytest.mark.parametrize("col_align, rows", [(16, 299), (48, 137), (640, 12)])
def test_small_d_rows_follow_the_formula(col_align, rows):
    assert host.small_d_rows(col_align) == rows == (195584 - 10 * col_align) // (24 * col_align + 268)


@pytest.mark.parametrize("cols, ub_factor", [(128, 58), (1000, 6), (4096, 1)])
def test_split_n_loops_hold_what_fits_the_twin_s_ub(cols, ub_factor):
    # The formula's rows (58 at 128 columns, 6080 // 1000 = 6 above small-D) fit the whole UB, which
    # the twin lets TPipe buffers fill as the NPU does (ANCHOR.md says so).
    plan = host.tiling(1 << 16, cols, "float32", deterministic=False)
    assert plan.ub_factor == ub_factor
    assert host.split_n_ub_bytes(ub_factor, -(-cols // 8) * 8, 48, 8) <= 196608


def test_deterministic_mode_asks_for_one_workspace_row_per_core():
    atomic = host.tiling(96, 100, "float32", deterministic=False)
    det = host.tiling(96, 100, "float32", deterministic=True)
    assert det.workspace_bytes - atomic.workspace_bytes == 48 * 104 * 4


def test_split_n_waits_for_the_scalar_unit_every_row(rng):
    # Per row a vector barrier after every pass (casts, products, the halving sum's Adds, the final
    # three passes): at 5120 columns 17 for 16-bit data.
    shape = (96, 5120)
    _, _, launch = host.run_anchor(*inputs(rng, shape, "fp16"))
    assert launch.total["pipe_barriers"] >= 17 * shape[0]


@pytest.mark.parametrize("bad, message", [
    (dict(dtype="float64"), "x must be one of float32, float16, bfloat16 for the anchor kernel, got float64"),
    (dict(rows=0), "the anchor kernel needs at least one row and one column, got 0 x 64"),
])
def test_tiling_rejects_what_it_cannot_run_in_one_sentence(bad, message):
    from rmsnorm_backward.errors import InvalidInputError

    args = {"rows": 8, "cols": 64, "dtype": "float32", **bad}
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        host.tiling(args["rows"], args["cols"], args["dtype"], deterministic=False)


def feature_rows():
    table = resources.path("benchmarks/anchor/ANCHOR.md").read_text().split("## Simplifications")[0]
    return [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]


def test_every_schedule_feature_cites_its_ops_nn_lines():
    rows = feature_rows()
    assert len(rows) >= 25
    for feature, _, source in rows:
        assert re.search(r"\d+(–\d+)?", source), f"{feature.strip()} cites no ops-nn line"


def test_cited_ops_nn_lines_exist():
    root = os.environ.get("OPS_NN_SRC")
    if not root:
        pytest.skip("OPS_NN_SRC is not set: it names a checkout of the public ops-nn sources")
    base = Path(root) / "norm" / "rms_norm_grad"
    files = {"tiling": "op_host/rms_norm_grad_tiling.cpp", "N": "op_kernel/rms_norm_grad_split_n_high_precision.h",
             "D": "op_kernel/rms_norm_grad_split_d_high_precision.h", "common": "op_kernel/rms_norm_grad_common.h",
             "reduce": "op_kernel/reduce_common.h"}
    lengths = {k: len((base / v).read_text().splitlines()) for k, v in files.items()}
    for _, _, source in feature_rows():
        for name, spans in re.findall(r"\b(tiling|N|D|common|reduce) ([\d–, ]+)", source):
            for last in re.findall(r"(\d+)(?=,|$|\s)", spans.strip()):
                assert int(last) <= lengths[name], f"{name} has {lengths[name]} lines, {source.strip()} cites {last}"


@pytest.mark.parametrize("constant, changed", [("pipe_barrier_cycles", 40.0), ("flag_sync_cycles", 80.0)])
def test_barriers_and_handovers_cost_the_anchor_per_row(rng, constant, changed):
    # Dearer barriers and handovers slow the anchor's rows (a dozen barriers and several handovers
    # each), and leave its results alone.
    from ascendc_twin import model_constants

    args = inputs(rng, (96, 1000), "fp32")
    dx, dgamma, base = host.run_anchor(*args, deterministic=True)
    with model_constants({constant: changed}):
        dx2, dgamma2, slow = host.run_anchor(*args, deterministic=True)
    np.testing.assert_array_equal(dx, dx2)
    np.testing.assert_array_equal(dgamma, dgamma2)
    busiest = max(c["model_cycles"] for c in base.cores)
    assert max(c["model_cycles"] for c in slow.cores) > busiest * 1.05


def test_independent_phases_let_the_row_at_a_time_anchor_borrow_the_pool(rng):
    # Its cores mostly compute: with independent phases each draws more than 1/48 of the pool while
    # it copies, so it finishes sooner; the launch still moves no faster than the pool allows.
    from rmsnorm_backward.perf import load_model, measured
    from rmsnorm_backward.perf.model import pool_cycles
    from ascendc_twin import model_constants

    model = load_model("Ascend910B2")
    args = inputs(rng, (480, 4096), "fp32")
    _, _, step = host.run_anchor(*args)
    with model_constants({"hbm_phase_overlap": 1.0}):
        _, _, free = host.run_anchor(*args)
    assert max(c["model_cycles"] for c in free.cores) < 0.95 * max(c["model_cycles"] for c in step.cores)
    assert measured(free.cores, model).modelled_us >= model.cycles_to_us(pool_cycles(free.cores, model))
