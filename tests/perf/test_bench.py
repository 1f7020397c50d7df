# SPDX-License-Identifier: BSD-3-Clause
"""`rmsnorm-backward bench` end to end on the smallest suite cases: JSON and plot files (atomic), the
table, and bad options (matplotlib missing, read-only targets) as one sentence before the bench starts."""
from __future__ import annotations

import json
import sys

import pytest

from rmsnorm_backward import fileio
from rmsnorm_backward.cli import bench as bench_cli
from rmsnorm_backward.cli import main
from rmsnorm_backward.perf import cann

QUICK = ["bench", "--suite", "atb", "--max-elements", "60000"]  # only [32, 32, 48] fp16


def test_bench_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(QUICK + ["--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "32x32x48" in table and "anchor us" in table and "det us" in table and "bound us" in table
    assert "ours: 1 of 1 cases pass the float64 golden" in table
    assert "modelled" in table
    report = json.loads(out.read_text())
    assert report["modelled"] is True and report["soc"] == "Ascend910B2"
    (case,) = report["cases"]
    assert case["shape"] == [32, 32, 48] and case["dtype"] == "fp16"
    assert case["rows"] * case["cols"] == 32 * 32 * 48
    assert case["min_bytes"] == 3 * 1024 * 48 * 2 + 4 * 1024 + 48 * 2 + 4 * 48
    assert case["modelled_us"] > case["roofline_us"] > 0
    assert case["modelled_us"] >= report["constants"]["launch_us"]
    # Writes land in L2 (it holds them all): HBM moves at least the reads, the links every byte.
    reads = case["min_bytes"] - (32 * 32 * 48 * 2 + 48 * 4)
    assert case["hbm_bytes"] >= reads and case["link_ratio"] >= 1.0 >= case["hbm_ratio"]
    assert case["restated_roofline_us"] == pytest.approx(case["roofline_us"] * reads / case["min_bytes"])
    assert case["past_l2_pct"] > 90 and "%bound-L" in table  # dy and x read once, past L2
    assert case["speedup"] == pytest.approx(case["anchor_us"] / case["modelled_us"])
    assert case["precision"]["ours"]["passed"], case["precision"]["ours"]
    if cann.missing():
        # Without the CANN sources: ours and the roofline, and the reason there is no anchor kernel.
        assert report["anchor"] == {"kernel": None, "missing": cann.missing()}
        assert f"no anchor kernel: {cann.missing()}" in table
        assert case["anchor_kernel_us"] is None
        assert set(case["precision"]) == {"ours"}
    else:
        assert report["anchor"]["ops_nn"] == cann.ops_nn_identity()
        for mode in ("anchor_kernel", "anchor_kernel_deterministic"):
            # the formula has the anchor's pipes overlap perfectly: the kernel can only be slower
            assert case[f"{mode}_us"] >= case["anchor_us"] >= report["constants"]["launch_us"]
            assert case[f"{mode}_speedup"] == pytest.approx(case[f"{mode}_us"] / case["modelled_us"])
            assert case[mode]["hbm_bytes"] >= reads and case[mode]["path"] == "split_n"
            assert case["precision"][mode]["passed"], case["precision"][mode]
    assert 0 < case["core_balance"] <= 1 and 0 < case["lane_utilisation"] <= 1
    assert case["bottleneck"] in {"HBM", "MTE2", "MTE3", "V", "S", "dependencies"}


def test_a_twin_rule_cann_s_kernel_breaks_fails_the_case_by_name(rng, monkeypatch):
    # Nothing stands in for CANN's kernel: a broken rule is a defect of the twin or of CANN's kernel.
    from rmsnorm_backward.errors import KernelRuleError
    from rmsnorm_backward.perf import bench as perf_bench, load_model
    from rmsnorm_backward.perf.suites import Case

    def broken(*args, deterministic, **kwargs):
        raise KernelRuleError("core 0: Copy: a planted rule")

    monkeypatch.setattr(perf_bench.cann, "missing", lambda: None)
    monkeypatch.setattr(perf_bench.cann, "run", broken)
    with pytest.raises(KernelRuleError, match=r"^CANN's kernel broke a twin rule on 32x32x48 float16 \(atomic "
                                              r"dgamma\): core 0: Copy: a planted rule$"):
        perf_bench.run_case(Case((32, 32, 48), "fp16"), load_model("Ascend910B2"), rng, anchor_kernel=True)


def test_bench_plot_draws_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra (matplotlib)")
    png = tmp_path / "bench.png"
    assert main(QUICK + ["--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.png"]


def fail_if_the_bench_starts(monkeypatch):
    monkeypatch.setattr(bench_cli, "run_case", lambda *a: pytest.fail("the bench started before the options were checked"))


def test_bench_plot_without_matplotlib_says_so_before_the_bench(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # any import of matplotlib now fails
    fail_if_the_bench_starts(monkeypatch)
    assert main(QUICK + ["--plot", str(tmp_path / "bench.png")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "Error: Invalid value for '--plot': needs matplotlib, which is not installed: "
        "pip install 'rmsnorm-backward[plot]'")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_bench_output_in_a_read_only_folder_is_one_sentence_before_the_bench(capsys, monkeypatch, read_only_dir,
                                                                             option):
    if option == "--plot":
        pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra (matplotlib)")
    fail_if_the_bench_starts(monkeypatch)
    target = read_only_dir / ("bench.png" if option == "--plot" else "bench.json")
    assert main(QUICK + [option, str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"Error: {option} {target} cannot be written (")


def test_bench_json_is_written_atomically(tmp_path, capsys, monkeypatch):
    out = tmp_path / "bench.json"
    out.write_text("old\n")
    monkeypatch.setattr(fileio.os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    assert main(QUICK + ["--json", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"Error: --json {out} cannot be written (No space left on device: ")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["bench.json"]


def test_bench_json_to_stdout(capsys):
    assert main(QUICK + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["shape"] for c in report["cases"]] == [[32, 32, 48]]


@pytest.mark.parametrize("argv, message", [
    (["--plot", "out.txt"], "Invalid value for '--plot': must name a .png file (got 'out.txt')"),
    (["--dtype", "fp64"], "Invalid value for '--dtype': must be among fp16, fp32, bf16, comma-separated (got 'fp64')"),
    (["--max-elements", "0"], "Invalid value for '--max-elements': 0 is not in the range x>=1."),
    (["--max-elements", "10"], "no case of suite 'atb' is left with --dtype fp16,fp32,bf16 and --max-elements 10"),
    (["--soc", "Ascend310P"], "Invalid value for '--soc': soc must be one of the supported SoCs"),
    (["--seed", "-3"], "Invalid value for '--seed': -3 is not in the range x>=0."),
    (["--suite", "huge"], "Invalid value for '--suite': 'huge' is not one of 'llm', 'small', 'atb', 'mid', 'all'."),
    (["--sensitivity", "--twin-speed"], "--twin-speed cannot be combined with --sensitivity"),
    (["--residual", "--sensitivity"], "--residual cannot be combined with --sensitivity"),
    (["--residual", "--twin-speed"], "--twin-speed cannot be combined with --residual"),
    (["--sensitivity", "--max-elements", "10"],
     "no sensitivity case of suite 'atb' is left with --dtype fp16,fp32,bf16 and --max-elements 10"),
])
def test_bench_rejects_bad_options_in_one_sentence(capsys, monkeypatch, argv, message):
    fail_if_the_bench_starts(monkeypatch)
    assert main(["bench", "--suite", "atb"] + argv) == 2
    *hint, error = capsys.readouterr().err.strip().splitlines()
    assert error.startswith(f"Error: {message}")
    assert all(line.startswith(("Usage: ", "Try ")) for line in hint if line)


def test_bench_twin_speed(capsys, monkeypatch):
    """--twin-speed times the twin against NumPy (on 4096x4096; here 64x64, once, to stay quick)."""
    from rmsnorm_backward.perf import bench as perf_bench

    monkeypatch.setattr(bench_cli, "twin_speed", lambda **kw: perf_bench.twin_speed(64, 64, runs=1, **kw))
    assert main(QUICK + ["--twin-speed", "--json"]) == 0
    speed = json.loads(capsys.readouterr().out)["twin_speed"]
    assert speed["shape"] == [64, 64] and speed["twin_seconds"] > 0 and speed["numpy_seconds"] > 0
    assert main(QUICK + ["--twin-speed"]) == 0
    assert "s for the kernel on 64x64 fp32, NumPy float32 " in capsys.readouterr().out


def test_bench_markdown_table(capsys):
    assert main(QUICK + ["--markdown"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert len(lines) == 3 and lines[1].startswith("| ---:") and "32x32x48" in lines[2]


def test_mid_suite_spans_the_mid_widths_at_16384_rows():
    from rmsnorm_backward.perf.suites import DTYPES, SUITES

    mid = SUITES["mid"]
    assert {c.rows for c in mid} == {16384} and {c.dtype for c in mid} == set(DTYPES)
    assert min(c.cols for c in mid) == 256 and max(c.cols for c in mid) == 2048
    assert set(mid) <= set(SUITES["all"])


def test_bench_residual_json_and_table(capsys):
    assert main(QUICK + ["--residual", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["cases"]
    assert report["modelled"] and report["residual"] and row["shape"] == [32, 32, 48]
    assert row["unfused_us"] == pytest.approx(row["backward_us"] + row["add_us"])
    assert row["speedup"] == pytest.approx(row["unfused_us"] / row["fused_us"])
    assert main(QUICK + ["--residual"]) == 0
    assert "x unfused" in capsys.readouterr().out
