"""The anchor kernel (benchmarks/anchor/: CANN RmsNormGrad's schedule as issue 17 describes it) on the
twin with every rule on: its golden check per path and dtype in both dgamma modes, deterministic
dgamma bitwise the same run to run, its tiling's path choice, and the schedule's traits the twin counts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rmsnorm_backward.golden import golden
from rmsnorm_backward.perf.bench import anchor_module
from rmsnorm_backward.precision import compare
from rmsnorm_backward.op_def import dtype_of

host = anchor_module("host")

# One shape per path (and the features each path has: several tiles per core, a batch of more than
# 255 rows, a split-D tail chunk, unaligned widths), each small enough to run in well under a second.
CASES = [
    ("small_d", (5000, 128)),     # 58-row tiles: two per core
    ("small_d", (13000, 16)),     # 270 rows in one tile: two batches of repeats
    ("split_n", (97, 5120)),      # rows not a multiple of the cores
    ("split_n", (100, 1000)),     # not a whole repeat, so the tree folds a tail
    ("split_d", (40, 12300)),     # chunks of 4096 and a tail of 12
    ("split_d", (70, 7168)),      # two 32-row groups on some cores
]


def inputs(rng, shape, dtype):
    dt = dtype_of(dtype).numpy()
    dy = rng.standard_normal(shape, dtype=np.float32).astype(dt)
    x = rng.standard_normal(shape, dtype=np.float32).astype(dt)
    rstd = rng.uniform(0.5, 2.0, shape[:-1]).astype(np.float32)
    gamma = rng.standard_normal(shape[-1], dtype=np.float32).astype(dt)
    return dy, x, rstd, gamma


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
    (640, "float16", "small_d"), (648, "float16", "split_n"), (40, "float16", "split_n"), (40, "float32", "small_d"),
    (6080, "bfloat16", "split_n"), (6081, "float32", "split_d"),
])
def test_tiling_picks_the_schedule_path(cols, dtype, path):
    assert host.tiling(4096, cols, dtype, deterministic=False).path == path


@pytest.mark.parametrize("cols, rows", [(16, 299), (48, 137), (640, 12)])
def test_small_d_tiles_follow_the_formula(cols, rows):
    assert host.small_d_tile_rows(cols) == rows == (195584 - 10 * cols) // (24 * cols + 268)


def test_deterministic_mode_asks_for_one_workspace_row_per_core():
    atomic = host.tiling(96, 100, "float32", deterministic=False)
    det = host.tiling(96, 100, "float32", deterministic=True)
    assert det.workspace_bytes - atomic.workspace_bytes == 48 * 128 * 4


def test_split_n_waits_for_the_scalar_unit_every_row(rng):
    # The schedule's cost the formula leaves out: per row a vector barrier after every pass and a
    # vector -> scalar handshake for the row sum, so the twin counts at least a dozen per row.
    shape = (96, 5120)
    _, _, launch = host.run_anchor(*inputs(rng, shape, "fp16"))
    assert launch.total["pipe_barriers"] >= 12 * shape[0]


@pytest.mark.parametrize("bad, message", [
    (dict(dtype="float64"), "x must be one of float32, float16, bfloat16 for the anchor kernel, got float64"),
    (dict(rows=0), "the anchor kernel needs at least one row and one column, got 0 x 64"),
])
def test_tiling_rejects_what_it_cannot_run_in_one_sentence(bad, message):
    from rmsnorm_backward.errors import InvalidInputError

    args = {"rows": 8, "cols": 64, "dtype": "float32", **bad}
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        host.tiling(args["rows"], args["cols"], args["dtype"], deterministic=False)
