# SPDX-License-Identifier: BSD-3-Clause
"""Shared by the kernel tests: the cases reaching each path and layout, and the golden check of one
simulate run (inputs come from operator_inputs.make_inputs)."""
from __future__ import annotations

import numpy as np

from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare
from rmsnorm_backward.simulate import simulate


# (path, dtype, shape) reaching each path and each of its layouts: the ring with a dx queue and with
# dx over dy, row buffers, gamma whole or in slots, dgamma whole in UB or partly in GM; one and
# several row groups (test_ub_budget checks that they do).
LAYOUT_CASES = [
    ("small_cols", "float32", (40, 64)),      # a row is one repeat: scalars as blocks, gamma a 64-lane pattern
    ("small_cols", "float16", (9, 200)),      # rows of more than two repeats: gamma one row
    ("small_cols", "bfloat16", (50, 72)),     # scalars spread over the row, gamma over the tile
    ("small_cols", "float32", (4096, 16)),    # several row groups: the dgamma reduction after the reset
    ("rows_in_ub", "float32", (48, 1000)),
    ("rows_in_ub", "float16", (33, 2400)),    # a tile at once: two rows a tile, the last tile one row
    ("rows_in_ub", "bfloat16", (37, 1001)),   # a tile at once: rows with padding lanes, a short last tile
    ("long_rows", "float32", (3, 6080)),      # two row buffers
    ("long_rows", "float16", (3, 4500)),      # three row buffers, the row one chunk of its stride
    ("long_rows", "float16", (3, 11081)),     # a ring with a dx queue
    ("long_rows", "float32", (3, 8192)),      # a ring, dx over dy
    ("long_rows", "bfloat16", (2, 12287)),
    ("long_rows", "bfloat16", (3, 14337)),    # a 2048-col ring, gamma in fp32, dgamma through the GM partial
    ("long_rows", "float32", (3, 12288)),     # a ring, dgamma through the GM partial
    ("long_rows", "float16", (3, 15361)),     # a ring of 3200-col chunks, dgamma through the GM partial, gamma in fp16
    ("long_rows", "float16", (3, 16897)),     # the same in 3072-col chunks with a 1536-lane row sum
    ("long_rows", "float16", (2, 18432)),     # the same in 2432-col chunks
    ("long_rows", "float32", (3, 13440)),     # gamma in chunks, pass 2 of a row beside pass 1 of the next
    ("long_rows_streamed", "float32", (2, 17536)),
    ("long_rows_streamed", "float16", (2, 20000)),
    ("long_rows_streamed", "float32", (2, 100000)),   # fp32 gamma in slots
    ("long_rows_streamed", "bfloat16", (2, 1000000)),
]


def run_and_check(dy, x, rstd, gamma, gamma_offset=0.0, dres=None, **options):
    """simulate vs the float64 golden by the precision standard; inputs must come back unchanged.
    Without gamma (None) dgamma comes back empty and dx alone is compared."""
    inputs = [a for a in (dy, x, rstd, gamma, dres) if a is not None]
    before = [a.copy() for a in inputs]
    dx, dgamma, stats = simulate(dy, x, rstd, gamma, dres, gamma_offset=gamma_offset, **options)
    for original, now in zip(before, inputs):
        assert original.tobytes() == now.tobytes(), "simulate changed an input"
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma, gamma_offset, dres)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    assert dgamma.shape == ((0,) if gamma is None else gamma.shape) and dgamma.dtype == np.float32
    dx_report = compare(dx, golden_dx, x.dtype.name)
    assert dx_report.passed, f"dx {stats['path']}: {dx_report}"
    if gamma is not None:
        dgamma_report = compare(dgamma, golden_dgamma, "float32", round_golden=False)
        assert dgamma_report.passed, f"dgamma {stats['path']}: {dgamma_report}"
    return dx, dgamma, stats


def min_bytes(x, gamma):
    """Each input read once, each output written once: dy, x, dx (dtype), rstd (fp32), gamma, dgamma."""
    cols = gamma.size
    rows = x.size // cols
    s = x.dtype.itemsize
    return rows * cols * 3 * s + rows * 4 + cols * s + cols * 4


def assert_one_core_gives_the_bits_of_all_cores(dy, x, rstd, gamma):
    """dx and dgamma bit for bit the same on one core as on every core the tiling asks for."""
    all_cores = simulate(dy, x, rstd, gamma)
    one_core = simulate(dy, x, rstd, gamma, block_dim=1)
    assert all_cores[2]["block_dim"] > 1 and one_core[2]["block_dim"] == 1
    assert all_cores[0].tobytes() == one_core[0].tobytes()
    assert all_cores[1].tobytes() == one_core[1].tobytes()


# The units a streaming schedule can be bound by: the vector pipe, MTE2 and the HBM channel.
STREAM_UNITS = ("busy_v_cycles", "busy_mte2_cycles", "busy_hbm_cycles")


def limiting_unit_share(stats: dict) -> float:
    """The most any core keeps its busiest streaming unit busy, over the launch's makespan (modelled;
    cores that finish their rows early wait in SyncAll, so the busiest core by makespan is not always
    the one with most work): 1 where a schedule never lets its limit idle."""
    cores = stats["cores"]
    return max(core[unit] for core in cores for unit in STREAM_UNITS) / max(core["model_cycles"] for core in cores)
