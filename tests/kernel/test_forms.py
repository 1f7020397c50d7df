# SPDX-License-Identifier: BSD-3-Clause
"""The operator's forms beyond the plain backward, on every path and layout against the float64 golden.

gamma_offset: the forward scaled by gamma + offset (Gemma's 1 + w with w near 0), the offset added in
fp32 after gamma is widened, so a 16-bit w keeps its low bits; dgamma is the plain one.
dres (the fused add-RMSNorm backward): the residual stream's gradient added to dx in fp32 before dx
is rounded, on every path with and without gamma.
float32 gamma beside 16-bit dy and x (fp32 master weights): gamma read as float32, never narrowed.
No gamma: the scale is 1 and there is no dgamma (an empty one comes back): no partials, workspace
or SyncAll, fewer bytes and a shorter modelled time (rows spread over more cores, as no dgamma
partial limits the row groups).
"""
import numpy as np
import pytest

from kernel_cases import LAYOUT_CASES, run_and_check
from operator_inputs import DTYPES as DTYPE
from operator_inputs import make_inputs
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.precision import compare
from rmsnorm_backward.golden import golden
from ascendc_twin import load_model
from rmsnorm_backward.perf.model import measured
from rmsnorm_backward.simulate import simulate, tiling_for


def gemma_inputs(rng, shape, dtype):
    """make_inputs with a gamma near 0, as Gemma stores w of the scale 1 + w."""
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    return dy, x, rstd, (0.1 * rng.standard_normal(gamma.shape)).astype(gamma.dtype)


@pytest.mark.parametrize("path,dtype,shape", LAYOUT_CASES)
def test_gamma_offset_on_every_layout(rng, path, dtype, shape):
    dy, x, rstd, gamma = gemma_inputs(rng, shape, dtype)
    dx, _, stats = run_and_check(dy, x, rstd, gamma, gamma_offset=1.0)
    assert stats["path"] == path and stats["tiling"]["gamma_offset"] == 1.0
    # An offset the kernel dropped would be far outside the standard: the scale is ~1 instead of ~0.1.
    without, _ = golden(dy, x, rstd, gamma)
    assert np.abs(dx.astype(np.float64) - without).max() > 0.1


@pytest.mark.parametrize("offset", [-0.5, 0.375, 1e-3])
def test_other_offsets(rng, offset):
    run_and_check(*gemma_inputs(rng, (33, 3000), "bfloat16"), gamma_offset=offset)


def test_offset_in_fp32_keeps_16_bit_gammas_low_bits(rng):
    """(1 + w) rounded to bf16 before the kernel loses w's low bits; the attribute does not: its dx
    is the golden rounded to bf16 far more often."""
    dy, x, rstd, gamma = gemma_inputs(rng, (48, 1000), "bfloat16")
    exact = golden(dy, x, rstd, gamma, 1.0)[0].astype(gamma.dtype)
    via_attr, _, _ = simulate(dy, x, rstd, gamma, gamma_offset=1.0)
    folded, _, _ = simulate(dy, x, rstd, (gamma.astype(np.float32) + 1).astype(gamma.dtype))
    off = [np.mean(d != exact) for d in (via_attr, folded)]
    assert off[0] < 0.01 < 0.1 < off[1], off


@pytest.mark.parametrize("offset,why", [
    (float("inf"), "gamma_offset must be finite in float32 (got inf)."),
    (float("nan"), "gamma_offset must be finite in float32 (got nan)."),
    (1e39, "gamma_offset must be finite in float32 (got 1e+39)."),
    ("1", "gamma_offset must be a real number (got '1')."),
    (True, "gamma_offset must be a real number (got True)."),
])
def test_bad_offsets_are_refused_in_one_sentence(rng, offset, why):
    with pytest.raises(InvalidInputError) as e:
        simulate(*make_inputs(rng, (4, 64), dtype="float32"), gamma_offset=offset)
    assert str(e.value) == why


@pytest.mark.parametrize("path,dtype,shape", LAYOUT_CASES)
def test_no_gamma_on_every_layout(rng, path, dtype, shape):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    dx, dgamma, stats = simulate(dy, x, rstd, None)
    assert stats["tiling"]["gamma_bytes"] == 0  # (the path may differ: gamma's buffers are not held)
    assert dgamma.shape == (0,) and dx.shape == x.shape and dx.dtype == x.dtype
    report = compare(dx, golden(dy, x, rstd, None)[0], dtype)
    assert report.passed, f"dx {stats['path']}: {report}"
    assert stats["total"]["sync_alls"] == 0 and tiling_for(dy, x, rstd, None)["user_workspace_bytes"] == 0
    assert {core["ub_peak_bytes"] for core in stats["cores"]} == {stats["ub_bytes"]}
    with_gamma = simulate(dy, x, rstd, gamma)[2]
    model = load_model()
    assert measured(stats["cores"], model).modelled_us < measured(with_gamma["cores"], model).modelled_us
    moved = [s["gm_read_bytes"] + s["gm_write_bytes"] for s in (stats, with_gamma)]
    assert moved[0] < moved[1]


# Rows that stream with gamma stay whole without it (the UB of dgamma holds them), dres or not.
@pytest.mark.parametrize("dtype,cols", [("float32", 16384), ("float16", 16384), ("bfloat16", 24576)])
@pytest.mark.parametrize("with_dres", [False, True], ids=["plain", "dres"])
def test_no_gamma_keeps_rows_whole_that_stream_with_gamma(rng, dtype, cols, with_dres):
    dy, x, rstd, _ = make_inputs(rng, (5, cols), dtype=dtype)
    dres = rng.standard_normal(x.shape).astype(x.dtype) if with_dres else None
    dx, _, stats = simulate(dy, x, rstd, None, dres)
    assert stats["path"] == "long_rows"
    report = compare(dx, golden(dy, x, rstd, None, dres=dres)[0], dtype)
    assert report.passed, f"dx: {report}"
    assert {core["ub_peak_bytes"] for core in stats["cores"]} == {stats["ub_bytes"]}


@pytest.mark.parametrize("shape,rstd_shape", [((6, 5, 40), (6, 1, 1)), ((6, 5, 40), (6, 5)), ((4, 1, 3), (4, 1, 1))])
def test_no_gamma_takes_the_row_from_rstd(rng, shape, rstd_shape):
    dy, x, _, _ = make_inputs(rng, shape, dtype="float32")
    rows = int(np.prod(rstd_shape))
    rstd = (1 / np.sqrt((x.astype(np.float64).reshape(rows, -1) ** 2).mean(1) + 1e-6)).astype(np.float32)
    dx, dgamma, stats = simulate(dy, x, rstd.reshape(rstd_shape), None)
    assert stats["rows"] == rows and stats["cols"] == x.size // rows
    assert compare(dx, golden(dy, x, rstd.reshape(rstd_shape), None)[0], "float32").passed


@pytest.mark.parametrize("rstd_shape,offset,why", [
    ((6, 5, 2), 0.0, "rstd must hold one value per row of x, shaped x.shape[:-k] + (1,)*k or x.shape[:-k] for the k "
                     "normalised dims (1 <= k < x.ndim), which give the row when there is no gamma (rstd [6, 5, 2], "
                     "x [6, 5, 40])."),
    ((6, 5, 1), 1.0, "gamma_offset must be 0 without gamma (got 1)."),
])
def test_no_gamma_refusals_name_the_rule(rng, rstd_shape, offset, why):
    dy, x, _, _ = make_inputs(rng, (6, 5, 40), dtype="float32")
    with pytest.raises(InvalidInputError) as e:
        simulate(dy, x, np.ones(rstd_shape, np.float32), None, gamma_offset=offset)
    assert str(e.value) == why


@pytest.mark.parametrize("no_gamma", [False, True], ids=["gamma", "no-gamma"])
@pytest.mark.parametrize("path,dtype,shape", LAYOUT_CASES)
def test_dres_on_every_layout(rng, path, dtype, shape, no_gamma):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    dres = rng.standard_normal(shape).astype(x.dtype)
    dx, _, stats = run_and_check(dy, x, rstd, None if no_gamma else gamma, dres=dres)
    assert stats["tiling"]["has_dres"] == 1
    # one rounding of dres + dx: the kernel's dx is the golden sum rounded, not a sum of rounded terms
    assert compare(dx, golden(dy, x, rstd, None if no_gamma else gamma, dres=dres)[0], dtype).passed


def test_dres_reaches_every_path_and_store():
    """The layout cases with dres still reach every path and every long-rows store (checked on the
    tiling: dres's buffers move some shapes to another layout)."""
    seen = set()
    for _, dtype, (rows, cols) in LAYOUT_CASES + DRES_EXTRA_CASES:
        t = tiling_for(*(np.empty(s, d) for s, d in (((rows, cols), DTYPE[dtype]), ((rows, cols), DTYPE[dtype]),
                                                      ((rows, 1), np.float32), ((cols,), DTYPE[dtype]),
                                                      ((rows, cols), DTYPE[dtype]))))
        f = t["fields"]
        seen.add(t["path"])
        if t["path"] == "long_rows":
            seen.add("ring" if f["row_buffers"] == 1 else "row buffers")
            seen.add("dx over dy" if f["dx_over_dy"] else "dx queue")
            if f["dgamma_ub_cols"] < cols:
                seen.add("dgamma in GM")
        if t["path"] == "long_rows_streamed":
            seen.add("gamma slots" if f["gamma_slots"] else "gamma whole")
    assert seen >= {"small_cols", "rows_in_ub", "long_rows", "long_rows_streamed", "ring", "row buffers",
                    "dx over dy", "dx queue", "gamma slots", "gamma whole", "dgamma in GM"}, seen


# Shapes that take the long-rows layouts with dres that LAYOUT_CASES do not reach with it.
DRES_EXTRA_CASES = [("long_rows", "float32", (3, 4000)),    # row buffers
                    ("long_rows", "float32", (3, 7250)),    # a ring with a dx queue
                    ("long_rows", "float16", (3, 4250)),    # a ring, dx over dy
                    ("long_rows", "bfloat16", (3, 12288))]  # a ring of whole chunks, the row sum per chunk


@pytest.mark.parametrize("path,dtype,shape", DRES_EXTRA_CASES)
def test_dres_on_the_extra_layouts(rng, path, dtype, shape):
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    _, _, stats = run_and_check(dy, x, rstd, gamma, dres=rng.standard_normal(shape).astype(x.dtype))
    assert stats["path"] == path


def test_dres_must_match_x(rng):
    dy, x, rstd, gamma = make_inputs(rng, (4, 64), dtype="float16")
    with pytest.raises(InvalidInputError) as e:
        simulate(dy, x, rstd, gamma, dres=x[:, :32].copy())
    assert str(e.value) == "dres must have the shape of x (dres [4, 32], x [4, 64])."
    with pytest.raises(InvalidInputError) as e:
        simulate(dy, x, rstd, gamma, dres=x.astype(np.float32))
    assert str(e.value) == "dres must have the dtype of x (dres float32, x float16)."


WIDE_GAMMA_CASES = [c for c in LAYOUT_CASES if c[1] != "float32"] + [("long_rows", "bfloat16", (3, 4096)),  # row buffers
                                                                ("long_rows", "float16", (3, 8192))]  # a ring


@pytest.mark.parametrize("offset", [0.0, 1.0])
@pytest.mark.parametrize("path,dtype,shape", WIDE_GAMMA_CASES)
def test_float32_gamma_beside_16_bit_data(rng, path, dtype, shape, offset):
    dy, x, rstd, _ = make_inputs(rng, shape, dtype=dtype)
    gamma = (1 - offset + 0.3 * rng.standard_normal(shape[-1])).astype(np.float32)  # not representable in 16 bits
    dx, _, stats = run_and_check(dy, x, rstd, gamma, gamma_offset=offset)
    assert stats["tiling"]["gamma_bytes"] == 4 and dx.dtype == x.dtype
    assert {core["ub_peak_bytes"] for core in stats["cores"]} == {stats["ub_bytes"]}


def test_float32_gamma_keeps_its_bits(rng):
    """The kernel reads float32 gamma as it is: its dx is the golden rounded to bf16; gamma rounded to
    bf16 first (what an upcast-free kernel of one dtype needs) moves a good share of dx off it."""
    dy, x, rstd, _ = make_inputs(rng, (48, 1000), dtype="bfloat16")
    gamma = (1 + 0.3 * rng.standard_normal(1000)).astype(np.float32)
    exact = golden(dy, x, rstd, gamma)[0].astype(x.dtype)
    off = [np.mean(simulate(dy, x, rstd, g)[0] != exact) for g in (gamma, gamma.astype(x.dtype))]
    assert off[0] < 0.01 < 0.1 < off[1], off
