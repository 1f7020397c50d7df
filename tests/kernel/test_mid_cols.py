# SPDX-License-Identifier: BSD-3-Clause
"""Mid cols (row_stride above 128 up to what fits 8 rows in UB) on the small-cols path: one
instruction per 64-lane column chunk covers every row of a tile, the last chunk of odd widths
shorter; row sums fold the chunks pairwise before one WholeReduceSum per row (rows of whole blocks of
repeats: one WholeReduceSum per repeat, then one per row). Odd widths, groups of
several tiles (halving tails included, tiles of 8 rows among them), 16-bit and fp32; the same bits
for one core as for all; and the modelled schedule (the twin's timeline) against the anchor."""
import numpy as np
import pytest

from rmsnorm_backward.perf.bench import run_case
from ascendc_twin import load_model
from rmsnorm_backward.perf.suites import Case
from rmsnorm_backward.simulate import tiling_for

from kernel_cases import assert_one_core_gives_the_bits_of_all_cores, run_and_check
from operator_inputs import make_inputs

# (dtype, rows, cols): row strides 136 (a 8-lane last chunk), 208, 336, 528 and 784.
MID_COLS = [
    ("float32", 8000, 130), ("float16", 7000, 200), ("float32", 5000, 333), ("bfloat16", 3000, 517),
    ("float16", 3000, 770),
]


@pytest.mark.parametrize("dtype,rows,cols", MID_COLS)
def test_mid_cols_match_the_golden(rng, dtype, rows, cols):
    dy, x, rstd, gamma = make_inputs(rng, (rows, cols), dtype=dtype)
    fields = tiling_for(dy, x, rstd, gamma)["fields"]
    assert fields["row_stride"] > 128 and fields["row_stride"] % 64 != 0
    assert rows // fields["groups"] > 2 * fields["tile_rows"], "each group must span several tiles"
    _, _, stats = run_and_check(dy, x, rstd, gamma)
    assert stats["path"] == "small_cols"


# Row strides of whole blocks of repeats (512): each row's repeat sums fill whole blocks, so a tile's
# row sums are two WholeReduceSums; gamma laid over the whole tile, a gamma_offset, and 16-bit rows
# with dres too (fp32 rows with dres no longer fit 8 rows beside its queue).
WHOLE_BLOCK_COLS = [("float16", 5000, 512, False), ("float16", 5000, 512, True), ("float32", 6000, 505, False),
                    ("bfloat16", 4100, 497, True)]


@pytest.mark.parametrize("dtype,rows,cols,dres", WHOLE_BLOCK_COLS)
def test_rows_of_whole_blocks_of_repeats_match_the_golden(rng, dtype, rows, cols, dres):
    dy, x, rstd, gamma = make_inputs(rng, (rows, cols), dtype=dtype, gamma_offset=0.5)
    residual = rng.standard_normal((rows, cols)).astype(x.dtype) if dres else None
    _, _, stats = run_and_check(dy, x, rstd, gamma, gamma_offset=0.5, dres=residual)
    fields = tiling_for(dy, x, rstd, gamma, residual, gamma_offset=0.5)["fields"]
    assert stats["path"] == "small_cols"
    assert fields["row_stride"] == 512 and fields["gamma_slots"] == fields["tile_rows"]
    assert rows // fields["groups"] > 2 * fields["tile_rows"], "each group must span several tiles"


@pytest.mark.parametrize("dtype,rows,cols", [MID_COLS[0], MID_COLS[3], WHOLE_BLOCK_COLS[0][:3]])
def test_mid_cols_one_core_gives_the_bits_of_all_cores(rng, dtype, rows, cols):
    assert_one_core_gives_the_bits_of_all_cores(*make_inputs(rng, (rows, cols), dtype=dtype))


@pytest.mark.xfail(strict=True, reason="the calibrated model puts 16384 x 256 fp16 above 1.3 x the roofline: HBM-bound, "
                   "and the launch alone is a large share of it")
def test_mid_cols_schedule_keeps_up_with_the_anchor():
    # Row by row (the rows-in-UB path) this shape was vector-bound at 3.35 x the roofline (0.922 x
    # the anchor); packed rows leave the core's HBM share as the bound.
    row = run_case(Case((16384, 256), "fp16"), load_model(), np.random.default_rng(0))
    assert row["path"] == "small_cols" and row["bottleneck"] == "HBM"
    assert row["x_roofline"] <= 1.3, f"{row['x_roofline']:.3f} x the roofline"
    assert row["speedup"] >= 0.94, f"{row['speedup']:.3f} x the anchor"
