"""`rmsnorm-backward bench` end to end on the smallest suite cases: JSON and plot files, the table,
and one-sentence errors for bad options."""
from __future__ import annotations

import json

import pytest

from rmsnorm_backward.cli import main

QUICK = ["bench", "--suite", "atb", "--max-elements", "60000"]  # only [32, 32, 48] fp16


def test_bench_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(QUICK + ["--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "32x32x48" in table and "anchor us" in table and "modelled" in table
    report = json.loads(out.read_text())
    assert report["modelled"] is True and report["soc"] == "Ascend910B2"
    (case,) = report["cases"]
    assert case["shape"] == [32, 32, 48] and case["dtype"] == "fp16"
    assert case["rows"] * case["cols"] == 32 * 32 * 48
    assert case["min_bytes"] == 3 * 1024 * 48 * 2 + 4 * 1024 + 48 * 2 + 4 * 48
    assert case["modelled_us"] > case["roofline_us"] > 0
    assert case["modelled_us"] >= report["constants"]["launch_us"]
    assert case["hbm_ratio"] >= 1.0 and case["link_ratio"] >= case["hbm_ratio"]
    assert case["speedup"] == pytest.approx(case["anchor_us"] / case["modelled_us"])
    assert 0 < case["core_balance"] <= 1 and 0 < case["lane_utilisation"] <= 1
    assert case["bottleneck"] in {"HBM", "MTE2", "MTE3", "V", "S", "dependencies"}


def test_bench_plot_needs_matplotlib_or_draws_a_png(tmp_path, capsys):
    png = tmp_path / "bench.png"
    try:
        import matplotlib  # noqa: F401  (an optional dependency)
    except ImportError:
        assert main(QUICK + ["--plot", str(png)]) == 2
        assert "--plot needs matplotlib" in capsys.readouterr().err and not png.exists()
    else:
        assert main(QUICK + ["--plot", str(png)]) == 0
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_json_to_stdout(capsys):
    assert main(QUICK + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["shape"] for c in report["cases"]] == [[32, 32, 48]]


@pytest.mark.parametrize("argv, message", [
    (["--plot", "out.txt"], "--plot must name a .png file"),
    (["--dtype", "fp64"], "dtype must be among"),
    (["--max-elements", "0"], "--max-elements must be a positive integer"),
    (["--max-elements", "10"], "no case of suite 'atb' is left"),
    (["--soc", "Ascend310P"], "soc must be one of the supported SoCs"),
])
def test_bench_rejects_bad_options_in_one_sentence(capsys, argv, message):
    assert main(["bench", "--suite", "atb"] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bench_markdown_table(capsys):
    assert main(QUICK + ["--markdown"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert len(lines) == 3 and lines[1].startswith("| ---:") and "32x32x48" in lines[2]
