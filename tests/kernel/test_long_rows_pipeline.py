# SPDX-License-Identifier: BSD-3-Clause
"""The whole-row-resident long rows as a pipeline, as the twin's timeline models it (modelled, not
measured): the rings of chunk slots keep the busiest core's limiting unit busy, fp16 rows form their
products from the halves, and rstd, fetched per group one batch ahead, reaches every row of a group
longer than two batches."""
import numpy as np
import pytest

from rmsnorm_backward import _tiling
from rmsnorm_backward.simulate import simulate

from kernel_cases import limiting_unit_share, run_and_check
from operator_inputs import make_inputs


def busy_share(shape, dtype) -> float:
    """The most any core keeps its busiest unit (vector, MTE2 or the HBM channel) busy, over the
    launch's makespan (cores that finish their rows early wait in SyncAll, so the busiest core by
    makespan is not always the one with most work). dx of these shapes fits in L2, which takes the
    writes: the HBM channel carries the reads only, and the vector pipe or MTE2 is the limit."""
    dy, x, rstd, gamma = make_inputs(np.random.default_rng(7), shape, dtype=dtype)
    _, _, stats = simulate(dy, x, rstd, gamma)
    assert stats["groups"] == 48 and stats["block_dim"] == 48
    return limiting_unit_share(stats)


def long_rows_fields(rows, cols, dtype):
    shape = [rows, cols]
    result = _tiling.compute_tiling(dy_shape=shape, x_shape=shape, rstd_shape=[rows, 1], gamma_shape=[cols],
                                  dy_dtype=dtype, x_dtype=dtype, rstd_dtype="float32", gamma_dtype=dtype,
                                  soc="Ascend910B2", block_dim=0)
    assert result["path"] == "long_rows"
    return result["fields"]


def vector_work(stats) -> tuple[int, int]:
    """The launch's vector instructions and their repeats, summed over its cores."""
    return (sum(core["vector_instrs"] for core in stats["cores"]),
            sum(core["vector_repeats"] for core in stats["cores"]))


# The ring writes dx over dy's slot and keeps spare slots, so the next row streams in across the
# row boundary: the limiting unit idles only for the first row, the drain and the dgamma reduction
# (16384 cols: dgamma through the group's GM partial, gamma in fp16, five chunks of 3328 cols).
@pytest.mark.parametrize("cols", [7168, 12288, 16384])
def test_ring_keeps_its_limiting_unit_busy(cols):
    fields = long_rows_fields(4096, cols, "float16")
    assert fields["row_buffers"] == 1 and fields["dx_over_dy"] == 1 and fields["spare_slots"] >= 1
    assert busy_share((4096, cols), "float16") >= 0.95


# bf16 rows past 12288 cols keep gamma in fp32 in a 2048-col ring, dgamma through the group's GM
# partial (11 vector instructions a chunk and a MulAddDst per further 1024 lanes of the row sum, where
# a 16-bit gamma would take 13), and run pass 2 of a row beside pass 1 of the next: each byte of dy
# and x is read once and the vector unit, their limit, stays busy.
@pytest.mark.parametrize("cols", [13312, 16384])
def test_bf16_rows_past_a_3072_col_ring_keep_gamma_in_fp32_and_the_vector_unit_busy(cols):
    fields = long_rows_fields(4096, cols, "bfloat16")
    assert fields["row_buffers"] == 1 and fields["chunk_cols"] == 2048 and fields["dgamma_ub_cols"] == 0
    assert fields["spare_slots"] >= 2 and fields["gamma_slots"] == 0
    assert busy_share((4096, cols), "bfloat16") >= 0.95


# fp16 ring rows form dy*x and dy*gamma from the halves (MulAddDst of half sources into fp32, exact as
# the widened products are), dgamma whole in UB: 10 vector instructions a chunk. bf16 has no such
# instruction; its ring rows hold gamma in fp32 instead, dgamma going through the GM partial: 11, where
# widening gamma per chunk takes 13. A row adds one more, the ReduceSum of its total. A sixth row of
# one group on one core shows a row's work alone; both meet the golden.
@pytest.mark.parametrize("dtype,per_chunk", [("float16", 10), ("bfloat16", 11)])
def test_ring_rows_issue_their_dtype_s_fewest_vector_instructions(rng, dtype, per_chunk):
    cols, chunk = 12288, 3072
    work = []
    for rows in (5, 6):
        dy, x, rstd, gamma = make_inputs(rng, (rows, cols), dtype=dtype)
        _, _, stats = run_and_check(dy, x, rstd, gamma)
        assert stats["path"] == "long_rows" and stats["tiling"]["chunk_cols"] == chunk and stats["groups"] == 1
        work.append(vector_work(stats))
    row = cols // chunk * per_chunk + 1
    assert (work[1][0] - work[0][0], work[1][1] - work[0][1]) == (row, row * chunk // 64)


# fp16 forms dy*x from the halves whatever gamma is (it needs dy and x only): with gamma held in fp32
# (4096-col chunks) and without gamma, one vector instruction fewer than bf16 per chunk that forms
# dy*x, and C/64 repeats fewer; both dtypes keep a row's chunk 0 widened for pass 2 instead. dx (and
# dgamma) meet the golden either way.
@pytest.mark.parametrize("no_gamma", [False, True], ids=["gamma in fp32", "no gamma"])
def test_fp16_rows_form_dy_x_from_the_halves_whatever_gamma_is(rng, no_gamma):
    rows, cols, chunk = 5, 8192, 4096
    instrs, repeats = {}, {}
    for dtype in ("float16", "bfloat16"):
        dy, x, rstd, gamma = make_inputs(rng, (rows, cols), dtype=dtype, no_gamma=no_gamma)
        _, _, stats = run_and_check(dy, x, rstd, gamma)
        assert stats["path"] == "long_rows" and stats["tiling"]["chunk_cols"] == chunk
        instrs[dtype], repeats[dtype] = vector_work(stats)
    products = rows * (cols // chunk - 1)
    assert instrs["bfloat16"] - instrs["float16"] == products
    assert repeats["bfloat16"] - repeats["float16"] == products * chunk // 64


# 6200 rows make 48 groups of 129 rows: three rstd batches per group, the third landing in the half
# the first used; on 7 cores each core also runs several groups one after another.
def test_rstd_batches_reach_every_row_of_a_long_group(rng):
    dy, x, rstd, gamma = make_inputs(rng, (6200, 4104), dtype="float16")
    assert long_rows_fields(6200, 4104, "float16")["groups"] == 48
    _, _, stats = run_and_check(dy, x, rstd, gamma, block_dim=7)
    assert stats["block_dim"] == 7
