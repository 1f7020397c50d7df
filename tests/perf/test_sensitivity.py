# SPDX-License-Identifier: BSD-3-Clause
"""`bench --sensitivity` (rmsnorm_backward.perf.sensitivity) on the smallest atb case: which constants
it varies, that a changed constant reaches the kernel's launch and moves the modelled figures the
way the model says, that the launch shortcut equals a real rerun, and that every goal is judged under
every variant. Every figure is modelled."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from rmsnorm_backward.cli import main
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.perf import goals, sensitivity
from rmsnorm_backward.perf.bench import make_inputs, run_case
from rmsnorm_backward.perf.suites import SUITES, Case
from rmsnorm_backward.simulate import simulate
from rmsnorm_backward.twin import model_constants

TINY = Case((32, 32, 48), "fp16")


def test_only_constants_nobody_measured_are_varied(model):
    names = sensitivity.varied(model)
    assert names and set(names) <= set(model.constants)
    for name, source in model.sources.items():
        assert (name in names) == source.startswith(("assumption", "range")), name
    assert "launch_us" in names and "vector_issue_cycles" not in names


def test_the_sample_is_drawn_from_the_suites():
    for name, cases in sensitivity.sample([n for n in SUITES if n != "all"]).items():
        assert cases and set(cases) <= set(SUITES[name])


def test_changed_constants_reach_the_launch_and_leave_the_results_alone(model, rng):
    dy, x, rstd, gamma = make_inputs(TINY, rng)
    dx, dgamma, base = simulate(dy, x, rstd, gamma)
    with model_constants({"sync_all_cycles": 4 * model["sync_all_cycles"]}):
        dx2, dgamma2, slow = simulate(dy, x, rstd, gamma)
    np.testing.assert_array_equal(dx2, dx)
    np.testing.assert_array_equal(dgamma2, dgamma)
    busiest = max(c["model_cycles"] for c in base["cores"])
    assert max(c["model_cycles"] for c in slow["cores"]) >= busiest + 3 * model["sync_all_cycles"] * 0.99
    assert {k: v for k, v in slow["total"].items() if "cycles" not in k} == \
        {k: v for k, v in base["total"].items() if "cycles" not in k}


@pytest.mark.parametrize("overrides, message", [
    ({"warp_size": 32}, "model constants must be among vector_cycles_per_repeat, "),
    ({"launch_us": -1.0}, "model constants must be finite and non-negative"),
])
def test_bad_model_constants_are_one_sentence(overrides, message):
    with pytest.raises(InvalidInputError, match=message):
        with model_constants(overrides):
            pytest.fail("the block ran with bad constants")


def test_the_launch_shortcut_equals_a_rerun(model, rng):
    row = run_case(TINY, model, rng, anchor_kernel=True)
    later = replace(model, constants={**model.constants, "launch_us": 2 * model["launch_us"]})
    with model_constants({"launch_us": 2 * model["launch_us"]}):
        rerun = run_case(TINY, later, rng, anchor_kernel=True)
    shifted = sensitivity._shift_launch(row, model["launch_us"])
    for key in ("modelled_us", "anchor_us", "roofline_us", "roofline_pct", "anchor_kernel_us",
                "anchor_kernel_deterministic_us"):
        assert shifted[key] == pytest.approx(rerun[key], rel=1e-9), key


def speedup_of(report: dict) -> float:
    """The baseline's ours / anchor in the dgamma mode the tiny case misses 1.15x by most."""
    return min(report["baseline"]["atb"]["speedup_anchor"][0], report["baseline"]["atb"]["speedup_anchor_det"][0])


def test_sensitivity_report(tmp_path, capsys, model):
    out = tmp_path / "sensitivity.json"
    argv = ["bench", "--suite", "atb", "--max-elements", "60000", "--sensitivity", "--json", str(out)]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| (baseline) | - | atb |" in table and "modelled" in table
    report = json.loads(out.read_text())
    assert report["modelled"] is True and report["sample"] == {"atb": [TINY.label]}
    got = {(v["constant"], v["factor"]) for v in report["variants"]}
    assert got == {(n, f) for n in sensitivity.varied(model) for _, f in sensitivity.values(model, n)}
    tried = {(v["constant"], v["value"]) for v in report["variants"]}
    assert {("hbm_phase_overlap", 1.0), ("l2_capacity_fraction", 0.25), ("pipe_barrier_cycles", 0.0),
            ("flag_sync_cycles", 0.0)} <= tried
    speedup = {(v["constant"], v["factor"]): v["suites"]["atb"]["speedup_formula"][0] for v in report["variants"]}
    base = report["baseline"]["atb"]["speedup_formula"][0]
    # The formula has no SyncAll, ours has one: a dearer SyncAll costs ours only. A longer launch
    # adds the same to both, so the ratio moves towards 1 (ours is behind on this tiny case).
    assert speedup["sync_all_cycles", 2.0] < base < speedup["sync_all_cycles", 0.5]
    assert base < 1 and speedup["launch_us", 0.5] < base < speedup["launch_us", 2.0] < 1
    # The anchor kernel runs under the same constants: its ratios are reported for every variant.
    for v in [report["baseline"]["atb"], *(v["suites"]["atb"] for v in report["variants"])]:
        low, high = v["speedup_anchor"]
        assert 0 < low <= high and 0 < v["speedup_anchor_det"][0]
    # Each goal judged under every variant: the tiny case is the one case, and no llm case is in the
    # sample for the roofline goal. At the baseline it is below 1.15x with its ceiling above (so in
    # reach); a variant that brings the anchor within 3 % of the (restated) bound takes it out of the
    # strong goal.
    for found in [report["conclusions"], *(v["conclusions"] for v in report["variants"])]:
        assert found["goal"]["cases"] == 1 and found["strong"]["cases"] <= 1 and found["roofline"]["cases"] == 0
    assert report["conclusions"]["strong"]["cases"] == 1
    assert report["conclusions"]["strong"]["fails"] == [[TINY.label, pytest.approx(speedup_of(report)), True]]
    for statement in goals.STATEMENTS.values():
        assert f"- {statement}: " in table
