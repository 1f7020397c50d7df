# SPDX-License-Identifier: BSD-3-Clause
"""What the precision standard's tolerance lets through, on every path and dtype:
- exact answers (tests/exact_answers.py): dx and dgamma to 0 ulp, so a 1-ulp rounding error (a cast
  that rounds ties away from zero) or a lane off by a little fails;
- tail lanes: widths 1, 2, 31, 63, 65 and 127 lanes past a 128-lane (so also past a 64-lane) boundary,
  with random inputs, and no failed element allowed in the last 128 lanes of any row;
- several dgamma row groups per core, and block_dim 1, against the golden (the grid's shapes have
  one group per core).
Each case names the path it must reach, so a tiling change that moves it fails loudly.
"""
import pytest

from exact_answers import assert_exact, exact_dres, exact_inputs, tail_failures
from kernel_cases import run_and_check
from operator_inputs import DTYPES, make_inputs
from rmsnorm_backward.golden import golden
from rmsnorm_backward.simulate import simulate

TAILS = [1, 2, 31, 63, 65, 127]

# (path, variant, dtype) -> (rows, cols): the shapes each path takes; long rows and the streamed path
# come in their variants (resident rows, a chunk ring, dgamma in GM, gamma in chunks; gamma whole or
# streamed, dgamma partly in GM).
EXACT_CASES = {
    ("small_cols", "spread", "float32"): (37, 13), ("small_cols", "spread", "float16"): (37, 13),
    ("small_cols", "spread", "bfloat16"): (37, 13),
    ("small_cols", "row blocks", "float32"): (20, 64), ("small_cols", "row blocks", "float16"): (20, 128),
    ("small_cols", "row blocks", "bfloat16"): (20, 128),
    ("small_cols", "mid", "float32"): (9, 301), ("small_cols", "mid", "float16"): (9, 700),
    ("small_cols", "mid", "bfloat16"): (9, 700),
    ("rows_in_ub", "", "float32"): (5, 1001), ("rows_in_ub", "", "float16"): (5, 2049),
    ("rows_in_ub", "", "bfloat16"): (5, 2049),
    ("long_rows", "row buffers", "float32"): (3, 4097), ("long_rows", "ring", "float32"): (3, 8193),
    ("long_rows", "ring", "float16"): (3, 8193), ("long_rows", "ring", "bfloat16"): (3, 12287),
    ("long_rows", "dgamma in GM", "bfloat16"): (3, 14337),
    ("long_rows", "dgamma in GM", "float32"): (3, 12289), ("long_rows", "gamma in chunks", "float32"): (3, 13313),
    ("long_rows_streamed", "gamma whole", "float32"): (2, 17409),
    ("long_rows_streamed", "gamma whole", "float16"): (2, 20001),
    ("long_rows_streamed", "gamma whole", "bfloat16"): (2, 20001),
    ("long_rows_streamed", "gamma streamed", "float32"): (2, 32769),
    ("long_rows_streamed", "dgamma in GM", "float16"): (2, 65537),
}


@pytest.mark.parametrize("path,variant,dtype", list(EXACT_CASES), ids=lambda v: str(v).replace(" ", "_"))
def test_exact_answer(rng, path, variant, dtype):
    inputs = exact_inputs(rng, *EXACT_CASES[path, variant, dtype], dtype)
    dx, dgamma, stats = simulate(*inputs)
    assert stats["path"] == path
    assert_exact(dx, dgamma, *inputs)


# dres exact too, on every path and dtype, on widths whose UB row stride differs from cols where the
# path keeps several rows a tile (a read of row r's dres at r * cols lands in the wrong row): dx is
# rounded once, after dres is added in fp32.
DRES_CASES = [("small_cols", "float32", (9, 301)), ("small_cols", "bfloat16", (9, 700)),
              ("rows_in_ub", "float32", (5, 1001)), ("rows_in_ub", "float16", (5, 2049)),
              ("rows_in_ub", "bfloat16", (5, 2049)), ("long_rows", "bfloat16", (3, 8193)),
              ("long_rows", "float32", (3, 14337)),
              ("long_rows_streamed", "float16", (2, 20001))]


@pytest.mark.parametrize("path,dtype,shape", DRES_CASES)
def test_exact_answer_with_dres(rng, path, dtype, shape):
    inputs = exact_inputs(rng, *shape, dtype)
    dres = exact_dres(rng, inputs[1])
    dx, dgamma, stats = simulate(*inputs, dres)
    assert stats["path"] == path and stats["tiling"]["has_dres"] == 1
    assert_exact(dx, dgamma, *inputs, dres=dres)


# The streamed path with dgamma partly in GM and two row groups: each group's partial must be written
# (not read) on the group's first row, as the workspace holds whatever was there before the launch.
def test_streamed_dgamma_partial_of_every_row_group(rng):
    dy, x, rstd, gamma = make_inputs(rng, (83, 43512), dtype="float32")
    _, _, stats = run_and_check(dy, x, rstd, gamma, block_dim=1)
    fields = stats["tiling"]
    assert stats["path"] == "long_rows_streamed" and fields["groups"] == 2 and fields["dgamma_ub_cols"] < 43512


# Several groups on some core (more groups than block_dim) and block_dim 1, exact, through the reduction.
@pytest.mark.parametrize("block_dim", [1, 2])
@pytest.mark.parametrize("dtype,shape,path", [
    ("float32", (600, 40), "small_cols"), ("bfloat16", (300, 1500), "rows_in_ub"),
    ("float16", (340, 4100), "long_rows"), ("float32", (260, 12289), "long_rows"),
    ("float32", (260, 13313), "long_rows"), ("float32", (260, 17409), "long_rows_streamed"),
])
def test_exact_answer_with_several_groups_per_core(rng, dtype, shape, path, block_dim):
    inputs = exact_inputs(rng, *shape, dtype)
    dx, dgamma, stats = simulate(*inputs, block_dim=block_dim)
    assert stats["path"] == path and stats["groups"] > block_dim and stats["block_dim"] == block_dim
    assert_exact(dx, dgamma, *inputs)


# Per path, multiples of 128 cols the tails are added to (the same path for every tail and dtype).
TAIL_BASES = {
    "small_cols": {"float32": (0, 256), "float16": (0, 512), "bfloat16": (0, 512)},
    "rows_in_ub": {"float32": (1024,), "float16": (1024,), "bfloat16": (1024,)},
    "long_rows": {"float32": (4096, 8192, 12288, 14336), "float16": (8192,), "bfloat16": (8192, 14336)},
    "long_rows_streamed": {"float32": (17408,), "float16": (20480,), "bfloat16": (20480,)},
}
TAIL_CASES = [(path, dtype, base + tail) for path, bases in TAIL_BASES.items() for dtype in DTYPES
              for base in bases[dtype] for tail in TAILS]


@pytest.mark.parametrize("path,dtype,cols", TAIL_CASES)
def test_tail_lanes_have_no_failed_element(rng, path, dtype, cols):
    dy, x, rstd, gamma = make_inputs(rng, (3, cols), dtype=dtype)
    dx, _, stats = run_and_check(dy, x, rstd, gamma)
    assert stats["path"] == path
    assert tail_failures(dx, golden(dy, x, rstd, gamma)[0], dtype) == 0


@pytest.mark.parametrize("block_dim", [1, 3])
@pytest.mark.parametrize("cols", [16, 65, 1000, 4100])
@pytest.mark.parametrize("dtype", DTYPES)
def test_golden_with_several_groups_per_core(rng, dtype, cols, block_dim):
    dy, x, rstd, gamma = make_inputs(rng, (700 if cols < 4096 else 400, cols), dtype=dtype)
    _, _, stats = run_and_check(dy, x, rstd, gamma, block_dim=block_dim)
    assert stats["groups"] > block_dim and stats["block_dim"] == block_dim
