# SPDX-License-Identifier: BSD-3-Clause
"""The whole-row-resident long rows as a pipeline, as the twin's timeline models it (modelled, not
measured): the rings of chunk slots keep the busiest core's HBM channel busy (and 16-bit rows too
long for them stream, HBM still busy), and rstd, fetched per group one batch ahead, reaches every
row of a group longer than two batches."""
import numpy as np
import pytest

from rmsnorm_backward import _tiling
from rmsnorm_backward.simulate import simulate

from kernel_cases import run_and_check
from operator_inputs import make_inputs


def busy_share(shape, dtype, resource):
    """The most any core keeps `resource` busy, over the launch's makespan (cores that finish their
    rows early wait in SyncAll, so the busiest core by makespan is not always the one with most work)."""
    dy, x, rstd, gamma = make_inputs(np.random.default_rng(7), shape, dtype=dtype)
    _, _, stats = simulate(dy, x, rstd, gamma)
    assert stats["groups"] == 48 and stats["block_dim"] == 48
    cores = stats["cores"]
    return max(core[resource] for core in cores) / max(core["model_cycles"] for core in cores)


def long_rows_fields(rows, cols, dtype):
    shape = [rows, cols]
    result = _tiling.compute_tiling(dy_shape=shape, x_shape=shape, rstd_shape=[rows, 1], gamma_shape=[cols],
                                  dy_dtype=dtype, x_dtype=dtype, rstd_dtype="float32", gamma_dtype=dtype,
                                  soc="Ascend910B2", block_dim=0)
    assert result["path"] == "long_rows"
    return result["fields"]


# The ring writes dx over dy's slot and keeps spare slots, so the next row streams in across the
# row boundary: the HBM channel idles only for the first row, the drain and the dgamma reduction.
@pytest.mark.parametrize("cols", [7168, 12288])
def test_ring_keeps_the_hbm_channel_busy(cols):
    fields = long_rows_fields(4096, cols, "float16")
    assert fields["row_buffers"] == 1 and fields["dx_over_dy"] == 1 and fields["spare_slots"] >= 1
    assert busy_share((4096, cols), "float16", "busy_hbm_cycles") >= 0.97


# 16-bit rows of 16384 cols would need 1856-col chunks in a ring, where the vector pipe is the
# bottleneck; they stream instead (longer chunks, fewer instructions per byte) and keep HBM busy.
def test_16_bit_rows_too_long_for_a_3072_col_ring_stream_and_keep_hbm_busy():
    shape = [4096, 16384]
    result = _tiling.compute_tiling(dy_shape=shape, x_shape=shape, rstd_shape=[4096, 1], gamma_shape=[16384],
                                  dy_dtype="bfloat16", x_dtype="bfloat16", rstd_dtype="float32",
                                  gamma_dtype="bfloat16")
    assert result["path"] == "long_rows_streamed" and result["fields"]["stream_slots"] >= 4
    assert busy_share((4096, 16384), "bfloat16", "busy_hbm_cycles") >= 0.97


# 6200 rows make 48 groups of 129 rows: three rstd batches per group, the third landing in the half
# the first used; on 7 cores each core also runs several groups one after another.
def test_rstd_batches_reach_every_row_of_a_long_group(rng):
    dy, x, rstd, gamma = make_inputs(rng, (6200, 4104), dtype="float16")
    assert long_rows_fields(6200, 4104, "float16")["groups"] == 48
    _, _, stats = run_and_check(dy, x, rstd, gamma, block_dim=7)
    assert stats["block_dim"] == 7
