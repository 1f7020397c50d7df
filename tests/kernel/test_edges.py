# SPDX-License-Identifier: BSD-3-Clause
"""Edge cases of the kernel: no rows, NaN/Inf in the inputs, the read-once traffic bound and bitwise
reproducible dgamma (run to run and across block dims)."""
import numpy as np
import pytest

from rmsnorm_backward.golden import golden
from rmsnorm_backward.simulate import simulate

from kernel_cases import min_bytes, run_and_check
from operator_inputs import DTYPES, make_inputs

# One shape per kernel path: small cols (rows of one repeat and of several), rows in UB, long rows
# (resident), long rows (streamed).
PATH_SHAPES = {"small_cols": (96, 40), "mid_cols": (60, 300), "rows_in_ub": (60, 1200), "long_rows": (9, 9000),
               "streamed": (3, 40000)}


@pytest.mark.parametrize("shape,gamma_dims", [((0, 64), 1), ((0, 3, 700), 2), ((2, 0, 20000), 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_rows(rng, dtype, shape, gamma_dims):
    dy, x, rstd, gamma = make_inputs(rng, shape, gamma_dims, dtype)
    dx, dgamma, stats = simulate(dy, x, rstd, gamma)
    assert dx.shape == x.shape and dx.size == 0
    assert dgamma.shape == gamma.shape and dgamma.dtype == np.float32
    assert not np.any(dgamma) and not np.signbit(dgamma).any()
    assert stats["gm_read_bytes"] <= gamma.nbytes  # nothing but gamma is read


@pytest.mark.parametrize("path", PATH_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_inf_land_where_the_golden_puts_them(rng, dtype, path):
    dy, x, rstd, gamma = make_inputs(rng, PATH_SHAPES[path], dtype=dtype)
    rows, cols = x.shape
    dy[0, cols // 2] = np.nan
    x[rows - 1, cols - 1] = np.inf
    x[rows // 2, 0] = -np.inf
    gamma[cols // 3] = np.nan if cols > 3 else gamma[cols // 3]
    rstd[min(1, rows - 1), 0] = np.inf
    dx, dgamma, _ = run_and_check(dy, x, rstd, gamma)
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma)
    assert np.array_equal(np.isnan(dx.astype(np.float64)), np.isnan(golden_dx))
    assert np.array_equal(np.isnan(dgamma), np.isnan(golden_dgamma))
    assert np.isnan(golden_dx).any() and np.isnan(golden_dgamma).any()


@pytest.mark.parametrize("dtype,shape", [
    ("float16", (48, 12000)), ("bfloat16", (64, 8192)), ("float16", (48, 6081)), ("bfloat16", (1000, 7168)),
    ("float32", (48, 8192)), ("float32", (200, 4097)), ("float32", (49, 1000)), ("float16", (4096, 256)),
    ("bfloat16", (3000, 128)), ("float32", (5000, 32)), ("float16", (48, 1)),
])
def test_dy_and_x_read_once(rng, dtype, shape):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    _, _, stats = run_and_check(dy, x, rstd, gamma)
    assert stats["min_bytes"] == min_bytes(x, gamma)
    moved = stats["gm_read_bytes"] + stats["gm_write_bytes"]
    assert moved >= stats["min_bytes"]
    assert moved <= 1.02 * stats["min_bytes"], f"{stats['path']}: {moved / stats['min_bytes']:.4f} x minimum"


# Rows whose dgamma goes through their group's GM partial (fp32 rows too long to hold it beside them,
# bf16 rows holding gamma in fp32 in its place) add into it row by row, atomically: the partial is
# written, never read back into UB. So the reads are dy, x and rstd once, gamma once per core and the
# partials once by the final reduction, to the byte.
@pytest.mark.parametrize("dtype,shape", [("float32", (192, 12289)), ("bfloat16", (192, 12288))])
def test_gm_dgamma_partial_is_added_into_not_read_back(rng, dtype, shape):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    _, _, stats = run_and_check(dy, x, rstd, gamma)
    assert stats["path"] == "long_rows" and stats["tiling"]["dgamma_ub_cols"] == 0 and stats["groups"] > 1
    reduction = stats["groups"] * gamma.size * 4
    assert stats["gm_read_bytes"] == dy.nbytes + x.nbytes + rstd.nbytes + stats["block_dim"] * gamma.nbytes + reduction


def test_dgamma_bitwise_identical_over_20_runs(rng):
    dy, x, rstd, gamma = make_inputs(rng, (6000, 96), dtype="bfloat16")
    first_dx, first_dgamma, stats = simulate(dy, x, rstd, gamma)
    assert stats["groups"] > 1 and stats["block_dim"] > 1
    for _ in range(19):
        dx, dgamma, _ = simulate(dy, x, rstd, gamma)
        assert dgamma.tobytes() == first_dgamma.tobytes()
        assert dx.tobytes() == first_dx.tobytes()


@pytest.mark.parametrize("dtype,shape", [("float16", (6000, 128)), ("float32", (1500, 700)),
                                         ("bfloat16", (400, 9000)), ("float32", (400, 12288)),
                                         ("float32", (400, 13440))])
def test_dgamma_identical_for_every_block_dim(rng, dtype, shape):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    results = {}
    for block_dim in (1, 7, 20, 40, 48):
        dx, dgamma, stats = simulate(dy, x, rstd, gamma, block_dim=block_dim)
        assert stats["block_dim"] == min(block_dim, stats["groups"])
        results[block_dim] = (dx.tobytes(), dgamma.tobytes())
    assert len(set(results.values())) == 1


def test_streamed_rows_same_bits_on_every_soc_and_block_dim(rng):
    dy, x, rstd, gamma = make_inputs(rng, (150, 20000), dtype="float32")
    results = set()
    for soc in ("Ascend910B2", "Ascend910B3", "Ascend910_93"):
        for block_dim in (1, 2, 3):
            dx, dgamma, stats = simulate(dy, x, rstd, gamma, soc=soc, block_dim=block_dim)
            assert stats["path"] == "long_rows_streamed" and stats["groups"] == 3
            results.add((dx.tobytes(), dgamma.tobytes()))
    assert len(results) == 1
