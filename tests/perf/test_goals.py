"""The performance goals on Ascend910B2 for a sample of the benchmark suites' cases, so a kernel or
tiling change that loses one fails here and not only in the benchmark table. Every figure is modelled:
the real kernel on the twin, its pipeline timeline (constants calibrated, issue 17), and the anchor
formula (a lower bound on CANN RmsNormGrad's time).

Bounds: issue 6's on bytes (HBM and link bytes over the minimum), on small rows (<= 2.5 x roofline) and
on speed (>= 0.95 x the formula); issue 17's on the llm suite's roofline share (>= 90 %, fp32 streamed
>= 85 %), which replace issue 6's 1.15 x / 1.4 x. Issue 17's goals against the anchor kernels come with
its columns (benchmarks/anchor/). The atb case the 0.95 x cannot reach under the model without atomic
dgamma ([32,32,48]; PERFORMANCE.md has the arithmetic) is left out of the sample, never given a looser
bound. A case the calibrated model puts past a bound is a strict
xfail naming the figure (MISSES), so it turns into a failure the day it is met."""
from __future__ import annotations

import numpy as np
import pytest

from rmsnorm_backward.perf.bench import run_case
from rmsnorm_backward.perf.suites import SUITES, Case

SAMPLE = {
    "llm": [Case((4096, 4096), "fp16"), Case((4096, 8192), "fp32"), Case((4096, 12288), "bf16"),
            Case((4096, 16384), "fp16"), Case((4096, 16384), "fp32")],
    "small": [Case((2**20, 48), "fp16"), Case((2**20, 64), "bf16"), Case((2**20, 128), "fp32")],
    "atb": [Case((48, 32, 48, 32, 32), "fp16"), Case((48, 32, 48, 32), "fp16")],
}
ANCHOR_OUT_OF_REACH = {Case((32, 32, 48), "fp16")}
# Modelled at commit f205f06 (bench --suite all); the kernel, not the bound, has to change.
# 4096 x 5120 16-bit is not in the sample: it models 90.1 % in a quiet run and 89.8 % when gamma's
# first read is charged to a core with an extra row (the timeline's L2 touch-order spread, about
# 0.3 %, PERFORMANCE.md), so a bound of 90 % there would pass or fail by thread timing.
MISSES = {
    Case((4096, 4096), "fp16"): "88.2 % of roofline < 90 %: the 6.5 us launch is 8.8 % of its 73.6 us "
                                "(the kernel alone is at 96.7 %)",
    Case((48, 32, 48, 32), "fp16"): "0.934 x the formula < 0.95, where the bound's arithmetic (PERFORMANCE.md) "
                                    "now allows 0.954",
}


def limits(suite: str, case: Case) -> dict[str, float]:
    """The bounds for `case`: upper bounds on hbm_ratio, link_ratio, x_roofline; lower bounds on
    speedup and roofline_pct."""
    wide = case.dtype != "fp32"
    out = {"speedup": 0.95}
    if suite in ("llm", "small"):
        out["hbm_ratio"] = 1.02
    # Rows read once where the long-rows path holds them: 16-bit up to 12288 cols (beyond, 16-bit rows
    # stream, their second read from L2, because that is faster: PERFORMANCE.md), fp32 up to 8192.
    if case.rows >= 4096 and case.cols <= (12288 if wide else 8192):
        out["link_ratio"] = 1.02
    if suite == "llm":
        out["roofline_pct"] = 90.0 if wide or case.cols <= 8192 else 85.0
    elif suite == "small":
        out["x_roofline"] = 2.5
    return out


def test_the_sample_is_drawn_from_the_suites():
    for suite, cases in SAMPLE.items():
        assert set(cases) <= set(SUITES[suite])
    assert ANCHOR_OUT_OF_REACH <= set(SUITES["atb"])
    assert set(MISSES) <= {c for cases in SAMPLE.values() for c in cases}


@pytest.mark.parametrize("suite, case", [
    pytest.param(s, c, marks=[pytest.mark.xfail(strict=True, reason=MISSES[c])] if c in MISSES else [])
    for s, cases in SAMPLE.items() for c in cases], ids=lambda v: v if isinstance(v, str) else v.label.replace(" ", "-"))
def test_modelled_goals_hold(suite, case, model, rng):
    row = run_case(case, model, rng)
    for name, bound in limits(suite, case).items():
        value = row[name]
        if name == "speedup":
            assert value >= bound, f"{case.label}: {value:.3f} x the anchor's speed < {bound} (modelled)"
        elif name == "roofline_pct":
            assert value >= bound, f"{case.label}: {value:.1f} % of roofline < {bound} % (modelled)"
        else:
            assert value <= bound, f"{case.label}: {name} {value:.3f} > {bound} (modelled)"
    assert np.isfinite(row["modelled_us"]) and row["modelled_us"] > row["roofline_us"]


# The fused add-RMSNorm backward (issue 16): one pass over dy, x, dres and dx. Rows the long-rows path
# holds with dres (16-bit up to 12288 cols) read each byte once (link bytes too); 16-bit rows of 16384
# cols stream with dres, as they do without it, their second read from L2.
RESIDUAL_SAMPLE = [Case((4096, 4096), "fp16"), Case((4096, 8192), "fp32"), Case((4096, 5120), "bf16"),
                   Case((4096, 12288), "bf16"), Case((4096, 16384), "fp16"), Case((4096, 16384), "fp32")]


@pytest.mark.parametrize("case", RESIDUAL_SAMPLE, ids=lambda c: c.label.replace(" ", "-"))
def test_fused_residual_goals_hold(case, model, rng):
    from rmsnorm_backward.perf.residual import run_residual_case

    assert case in SUITES["llm"]
    row = run_residual_case(case, model, rng)
    assert row["hbm_ratio"] <= 1.02, f"{case.label}: HBM bytes {row['hbm_ratio']:.3f} x the fused minimum (modelled)"
    if case.cols <= (12288 if case.dtype != "fp32" else 8192):
        assert row["path"] == "long_rows", f"{case.label}: {row['path']}, not held whole with dres"
        assert row["link_ratio"] <= 1.02, f"{case.label}: link bytes {row['link_ratio']:.3f} x the minimum (modelled)"
    assert row["speedup"] >= 1.4, f"{case.label}: {row['speedup']:.3f} x the unfused pair < 1.4 (modelled)"
