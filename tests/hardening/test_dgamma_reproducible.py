# SPDX-License-Identifier: BSD-3-Clause
"""Reproducible dgamma, extending tests/kernel/test_edges.py (20 runs of one small-cols case, block
dims 1..48 for three shapes on the default SoC): the same input gives the same dgamma and dx bits on
every SoC and every block dim the tiling may be given, on each path with several dgamma row groups and
with 1-, 2- and 3-dim gamma; 20 runs of the rows-in-UB and long-rows paths agree bit for bit; and the
groups' partials are folded in the order the kernel documents, bit for bit against NumPy.
The design makes this possible: the row groups of dgamma depend on the shape only (never on the core
count) and their partials are added in one fixed order after SyncAll, without atomics."""
import numpy as np
import pytest

import rmsnorm_backward.simulate as simulate_module
from ascendc_twin import run_kernel, soc_table
from rmsnorm_backward.golden import golden
from rmsnorm_backward.simulate import simulate

from operator_inputs import make_inputs

SOC_CORES = {row["name"]: row["vector_cores"] for row in soc_table()}
BLOCK_DIMS = (1, 7, 20, 40, 48)

# (x shape, gamma dims, dtype, the kernel path it takes): each gives several dgamma groups.
CASES = {
    "small cols, 3-D gamma": ((300, 3, 5, 7), 3, "float32", "small_cols"),
    "small cols, fp16": ((2000, 24), 1, "float16", "small_cols"),
    "rows in UB, 2-D gamma": ((600, 40, 30), 2, "float16", "rows_in_ub"),
    "long rows": ((250, 9000), 1, "bfloat16", "long_rows"),
}


def inputs(rng, shape, gamma_dims, dtype):
    return make_inputs(rng, shape, gamma_dims, dtype, scale=2.0 ** int(rng.integers(-4, 5)))


@pytest.mark.parametrize("case", CASES)
def test_same_bits_on_every_soc_and_block_dim(rng, case):
    shape, gamma_dims, dtype, path = CASES[case]
    dy, x, rstd, gamma = inputs(rng, shape, gamma_dims, dtype)
    results, groups = set(), set()
    for soc, cores in SOC_CORES.items():
        for block_dim in BLOCK_DIMS:
            if block_dim > cores:
                continue
            dx, dgamma, stats = simulate(dy, x, rstd, gamma, soc=soc, block_dim=block_dim)
            assert stats["block_dim"] == min(block_dim, stats["groups"]) and stats["path"] == path
            groups.add(stats["groups"])
            results.add((dx.tobytes(), dgamma.tobytes()))
    assert len(groups) == 1 and groups.pop() > 1, "the case must sum dgamma in several row groups"
    assert len(results) == 1


@pytest.mark.parametrize("case", ["rows in UB, 2-D gamma", "long rows"])
def test_same_bits_over_20_runs(rng, case):
    shape, gamma_dims, dtype, _ = CASES[case]
    dy, x, rstd, gamma = inputs(rng, shape, gamma_dims, dtype)
    runs = {tuple(a.tobytes() for a in simulate(dy, x, rstd, gamma)[:2]) for _ in range(20)}
    assert len(runs) == 1


def fold_in_documented_order(partials: np.ndarray) -> np.ndarray:
    """dgamma from the groups' fp32 partials [groups, cols] as rms_norm_backward_dgamma.h documents the
    order: the upper half of the groups added onto the lower (rows - rows // 2 of them stay) until two
    are left, then those two, all in float32."""
    p = partials.astype(np.float32).copy()
    rows = len(p)
    while rows > 2:
        half = rows // 2
        p[:half] = p[:half] + p[rows - half:rows]
        rows -= half
    return p[0] + p[1] if rows == 2 else p[0]


def test_dgamma_folds_the_group_partials_in_the_documented_order(rng, monkeypatch):
    shape, gamma_dims, dtype, _ = CASES["small cols, fp16"]
    dy, x, rstd, gamma = inputs(rng, shape, gamma_dims, "float32")
    launched = {}

    def keep_workspace(source, name, args, **kwargs):
        launched.update(args)
        return run_kernel(source, name, args, **kwargs)

    monkeypatch.setattr(simulate_module, "run_kernel", keep_workspace)
    _, dgamma, stats = simulate(dy, x, rstd, gamma)
    fields, groups, cols = stats["tiling"], stats["groups"], stats["cols"]
    assert groups > 2, "the case must fold several levels"
    user = launched["workspace"][stats["workspace_bytes"] - groups * fields["partial_stride"] * 4:]
    partials = user.view(np.float32).reshape(groups, fields["partial_stride"])[:, :cols]
    # the partials are the groups' sums: together they are dgamma within float32 rounding
    np.testing.assert_allclose(partials.astype(np.float64).sum(axis=0), golden(dy, x, rstd, gamma)[1],
                               rtol=1e-4, atol=1e-3)
    expected = fold_in_documented_order(partials)
    assert np.array_equal(dgamma.view(np.uint32), expected.view(np.uint32)), (
        f"max difference {np.abs(dgamma - expected).max():.3g}")
