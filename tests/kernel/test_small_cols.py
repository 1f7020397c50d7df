# SPDX-License-Identifier: BSD-3-Clause
"""The small-cols path (rows of at most 128 UB elements) with groups of many tiles: several rstd
batches per group, the halving tail tiles, every per-row layout (one block per row at 24 to 64 and at
128 fp32 lanes, spread over the row otherwise) and gamma pattern; the same bits for one core as for
all, groups of one tile smaller than the tile (its dgamma folded from fewer rows) included; and its
modelled schedule keeping its limiting unit busy (the figures are modelled by the twin's timeline)."""
import numpy as np
import pytest

from rmsnorm_backward.simulate import simulate, tiling_for

from kernel_cases import assert_one_core_gives_the_bits_of_all_cores, limiting_unit_share, run_and_check
from operator_inputs import make_inputs

# (dtype, rows, cols): row_stride 8, 16, 24, 32, 48, 64, 80 and 128, each with groups of more than
# four tiles (the rstd batch) plus a remainder.
MANY_TILES = [
    ("float32", 50000, 5), ("float16", 60000, 16), ("float32", 40000, 24), ("bfloat16", 36000, 32),
    ("float16", 25000, 40), ("float32", 20000, 64), ("bfloat16", 13000, 80), ("float16", 12000, 128),
]


@pytest.mark.parametrize("dtype,rows,cols", MANY_TILES)
def test_groups_of_many_tiles_match_the_golden(rng, dtype, rows, cols):
    dy, x, rstd, gamma = make_inputs(rng, (rows, cols), dtype=dtype)
    fields = tiling_for(dy, x, rstd, gamma)["fields"]
    assert rows // fields["groups"] > 4 * fields["tile_rows"], "each group must span several rstd batches"
    _, _, stats = run_and_check(dy, x, rstd, gamma)
    assert stats["path"] == "small_cols"


@pytest.mark.parametrize("dtype,rows,cols", [MANY_TILES[1], MANY_TILES[5], MANY_TILES[7], ("float16", 1024, 48)])
def test_one_core_gives_the_bits_of_all_cores(rng, dtype, rows, cols):
    assert_one_core_gives_the_bits_of_all_cores(*make_inputs(rng, (rows, cols), dtype=dtype))


@pytest.mark.parametrize("shape,dtype", [((262144, 48), "float16"), ((262144, 64), "bfloat16")])
def test_schedule_keeps_its_limiting_unit_busy(shape, dtype):
    # Streaming shapes (dx fits in L2, which takes the writes: the vector pipe or MTE2 is the limit,
    # never the scalar unit or MTE3): the copy order and early slot release keep that unit busy but
    # for the launch's fixed tail, the last tile, SyncAll (900 cycles) and the dgamma reduction,
    # about 2.8k of these launches' ~60k cycles (modelled).
    dy, x, rstd, gamma = make_inputs(np.random.default_rng(0), shape, dtype=dtype)
    _, _, stats = simulate(dy, x, rstd, gamma)
    assert stats["path"] == "small_cols"
    assert limiting_unit_share(stats) >= 0.94
