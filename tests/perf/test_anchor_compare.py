"""rmsnorm_backward.perf.anchor.compare, the PERFORMANCE.md anchor tables, on hand-made bench rows: its counts
below 1.0x and 1.1x per suite, the launch-bound ATB cases left out of them, and bad input."""
from __future__ import annotations

import json

import pytest

from rmsnorm_backward.perf.anchor import compare
LAUNCH_US = 3.0


def row(shape, dtype, ours, atomic, det):
    return {"shape": list(shape), "dtype": dtype, "modelled_us": ours, "roofline_us": ours / 2, "roofline_pct": 50.0,
            "path": "rows_in_ub", "bottleneck": "HBM", "anchor_kernel_us": atomic,
            "anchor_kernel_deterministic_us": det, "anchor_kernel_speedup": atomic / ours,
            "anchor_kernel_deterministic_speedup": det / ours, "anchor_kernel": {"path": "split_n", "bottleneck": "V"}}


ROWS = [
    row((4096, 4096), "fp16", 100.0, 150.0, 155.0),   # llm, clear in both modes
    row((4096, 5120), "fp32", 100.0, 90.0, 105.0),    # llm, < 1.0x atomic, < 1.1x deterministic
    row((32, 32, 48), "fp16", 5.0, 4.5, 5.0),         # atb, anchor within 2x the launch: outside the goal
    row((16384, 256), "fp32", 30.0, 31.0, 34.0),      # mid, < 1.1x in both
]


def report_file(tmp_path, rows, name="bench.json", soc="Ascend910B2"):
    path = tmp_path / name
    path.write_text(json.dumps({"soc": soc, "constants": {"launch_us": LAUNCH_US}, "cases": rows}))
    return str(path)


def test_summary_counts_per_suite_and_leaves_launch_bound_atb_cases_out(tmp_path, capsys):
    assert compare.main([report_file(tmp_path, ROWS[:2]), report_file(tmp_path, ROWS[2:], "more.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    suites = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in lines if line.startswith("| ")}
    assert suites["llm"][1:] == ["2", "0.90, 1.20, 1.50", "1", "1", "1.05, 1.30, 1.55", "0", "1 |"]
    assert suites["mid"][1:] == ["1", "1.03, 1.03, 1.03", "0", "1", "1.13, 1.13, 1.13", "0", "0 |"]
    assert "atb" not in suites
    listed = [line.split(" | ")[0] for line in lines if line.startswith("| 4096x") or line.startswith("| 32x")
              or line.startswith("| 16384x")]
    assert listed == ["| 4096x5120 fp32", "| 32x32x48 fp16 (launch-bound: outside the goal)", "| 16384x256 fp32"]


def test_ceiling_is_the_anchor_over_roofline_plus_launch(tmp_path, capsys):
    assert compare.main([report_file(tmp_path, [ROWS[3]])]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith(f"| {31.0 / (15.0 + LAUNCH_US):.3f}, {34.0 / (15.0 + LAUNCH_US):.3f} |")


@pytest.mark.parametrize("change, message", [
    ({"anchor_kernel_us": None}, "a bench JSON has no anchor kernel columns: write it with rmsnorm-backward bench --json"),
    ({"soc": "Ascend910_93"}, "the bench JSONs must come from one SoC and one set of model constants"),
])
def test_bad_input_is_one_sentence(tmp_path, capsys, change, message):
    soc = change.get("soc", "Ascend910B2")
    rows = [dict(ROWS[0], **{k: v for k, v in change.items() if k != "soc"})]
    assert compare.main([report_file(tmp_path, ROWS[:1]), report_file(tmp_path, rows, "b.json", soc)]) == 2
    assert capsys.readouterr().err.strip() == message
