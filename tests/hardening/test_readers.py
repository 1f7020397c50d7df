# SPDX-License-Identifier: BSD-3-Clause
"""Every file the CLI reads is checked before it is used: report's bench JSON row by row, golden's
case.json (this operator, integer dims in int64's range, only its tensors, bounded nesting) and gen's
op_def (names that are C identifiers, each once). A bad one is one sentence naming the file, the row
or tensor and the rule, exit 2 (1 is only golden's precision failure), never a traceback."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from rmsnorm_backward import op_def
from rmsnorm_backward.cli import main

from cli_output import error_line

ROW = {"shape": [32, 32, 48], "dtype": "fp16", "path": "long_rows", "bottleneck": "MTE2", "modelled_us": 10.5,
       "roofline_us": 6.0, "restated_roofline_us": 6.4, "anchor_kernel_us": 12.0, "anchor_kernel_deterministic_us": 12.5, "roofline_pct": 57.1,
       "kernel_roofline_pct": 96.5, "kernel_restated_pct": 92.0, "anchor_kernel_roofline_pct": 90.0, "anchor_kernel_speedup": 1.14,
       "anchor_kernel_deterministic_speedup": 1.19, "past_l2_pct": 99.0, "precision": None}
CHECK = {"passed": True, "failed_elements": 0, "allowed_failures": 0.5, "max_rel_err": 1e-4, "max_ulp": None}
HEADER = {"soc": "Ascend910B2", "commit": None, "dirty": False, "soc_facts": {}, "constants": {"launch_us": 6.5},
          "sources": {}, "suite": "all", "anchor": {"kernel": "CANN ops-nn RmsNormGrad",
                                                   "ops_nn": {"commit": None, "version": "9.0", "op_sha256": "ab"}}}


def without(key):
    return lambda row: {k: v for k, v in row.items() if k != key}


def with_(**changes):
    return lambda row: {**row, **changes}


@pytest.mark.parametrize("change, says", [
    (without("modelled_us"), "row 1 of 'cases' has no modelled_us"),
    (with_(modelled_us="10.5"), "row 1 of 'cases' has modelled_us '10.5'; it must be a positive finite number"),
    (with_(modelled_us=0), "row 1 of 'cases' has modelled_us 0; it must be a positive finite number"),
    (with_(anchor_kernel_us=math.nan), "row 1 of 'cases' has anchor_kernel_us nan; it must be a positive finite"),
    (with_(modelled_us="nan"), "row 1 of 'cases' has modelled_us 'nan'; it must be a positive finite number"),
    (with_(dtype="fp64"), "row 1 of 'cases' has dtype 'fp64'; it must be one of fp16, bf16, fp32"),
    (with_(shape=[]), "row 1 of 'cases' has shape []; it must be a non-empty list of positive integers"),
    (with_(shape=[4, 2.5]), "row 1 of 'cases' has shape [4, 2.5]; it must be a non-empty list of positive integers"),
    (lambda row: [row], "row 1 of 'cases' must be an object (got list)"),
    (without("past_l2_pct"), "row 1 of 'cases' has no past_l2_pct"),
    (with_(precision={"ours": {"passed": True, "dx": CHECK, "dgamma": {**CHECK, "max_rel_err": "nan"}}}),
     "row 1 of 'cases' has precision {'ours': "),
    (with_(precision={"anchor_kernel": {"passed": True, "dx": CHECK, "dgamma": CHECK}}),
     "row 1 of 'cases' has precision {'anchor_kernel': "),
])
def test_a_bad_bench_row_is_named_with_its_field(change, says, tmp_path, capsys):
    bench, sens = tmp_path / "all.json", tmp_path / "sens.json"
    bench.write_text(json.dumps({**HEADER, "cases": [ROW, change(dict(ROW))]}))  # NaN as JSON's NaN literal
    sens.write_text("{}")
    assert main(["report", str(bench), str(sens), "-o", str(tmp_path / "out.md")]) == 2
    assert error_line(capsys).startswith(f"Error: the bench report {bench}: {says}")
    assert not (tmp_path / "out.md").exists()


def test_a_good_bench_row_with_precision_checks_is_read(tmp_path, capsys):
    from rmsnorm_backward.perf import report

    good = {**ROW, "precision": {"ours": {"passed": True, "dx": CHECK, "dgamma": CHECK}}}
    bench = tmp_path / "all.json"
    bench.write_text(json.dumps({**HEADER, "cases": [ROW, good]}))
    assert report.load_bench(bench)["cases"][1] == good


def test_a_field_the_report_does_not_read_is_left_alone(tmp_path):
    # Only what the report reads is checked: an older bench's anchor_kernel_source and per-check
    # kernel name, whatever their values, are no reason to refuse it.
    from rmsnorm_backward.perf import report

    older = {**ROW, "anchor_kernel_source": None,
             "precision": {"ours": {"passed": True, "dx": CHECK, "dgamma": CHECK},
                           "anchor_kernel": {"passed": True, "dx": CHECK, "dgamma": CHECK, "kernel": 7}}}
    bench = tmp_path / "all.json"
    bench.write_text(json.dumps({**HEADER, "cases": [older]}))
    assert report.load_bench(bench)["cases"] == [older]


@pytest.mark.parametrize("anchor", [None, {"ops_nn": {"commit": None, "version": None}},
                                    {"ops_nn": {"commit": 7, "version": None, "op_sha256": "ab"}}])
def test_a_bad_anchor_header_is_one_sentence(anchor, tmp_path, capsys):
    bench, sens = tmp_path / "all.json", tmp_path / "sens.json"
    bench.write_text(json.dumps({**HEADER, "anchor": anchor, "cases": [ROW]}))
    sens.write_text("{}")
    assert main(["report", str(bench), str(sens)]) == 2
    assert error_line(capsys).startswith(f"Error: the bench report {bench}: 'anchor' must be an object whose ops_nn")


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sample") / "case"
    assert main(["golden", "--shape", "4,8", "--save-dir", str(d), "--json"]) == 0
    return d


def edited(sample: Path, where: Path, edit) -> Path:
    d = where / "case"
    shutil.copytree(sample, d)
    case = json.loads((d / "case.json").read_text())
    text = edit(case)
    (d / "case.json").write_text(text if isinstance(text, str) else json.dumps(case))
    return d


def both(case: dict, **shapes) -> None:
    """x and dy (and dx) take the same new shape, so only the rule under test is broken."""
    for name in ("x", "dy", "dx"):
        case["shapes"][name] = shapes["x"]


@pytest.mark.parametrize("edit, says", [
    (lambda c: c.update(op="LayerNormBackward"), "its op must be 'RmsNormBackward' (got 'LayerNormBackward')"),
    (lambda c: both(c, x=[4, 4.5]), "dy's shape must be a list of integers (got [4, 4.5])"),
    (lambda c: both(c, x=[4, 8.0]), "dy's shape must be a list of integers (got [4, 8.0])"),
    (lambda c: (c["shapes"].update(weight=[8]), c["dtypes"].update(weight="float32")),
     "RmsNormBackward has no tensor 'weight' (its tensors: dy, x, rstd, gamma, dres, dx, dgamma)"),
    (lambda c: both(c, x=[4, 1e300]), "dy's shape must be a list of integers (got [4, 1e+300])"),
    (lambda c: both(c, x=[4, 10**30]), f"dy's shape [4, {10**30}] has a dim outside 0..{2**63 - 1}"),
    (lambda c: "[" * 200_000 + "]" * 200_000, "nested more than 16 deep"),
    (lambda c: json.dumps([c]), "the file must be a JSON object (got list)"),
    (lambda c: c.update(shapes=[8]), "its shapes must be a JSON object (got list)"),
])
def test_a_bad_case_json_is_one_sentence(edit, says, sample, tmp_path, capsys):
    d = edited(sample, tmp_path, edit)
    assert main(["golden", "--from-dir", str(d)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert captured.err.strip().splitlines()[-1] == f"Error: {d}/case.json is not a valid case description ({says})"


@pytest.mark.parametrize("rename, says", [
    ('name = "d y"', "tensor and attribute names must be C identifiers (got 'd y')"),
    ('name = "x"', "tensor and attribute names must be unique ('x' named more than once)"),
])
def test_gen_refuses_bad_names_in_op_def(rename, says, tmp_path, capsys):
    text = op_def.DEFAULT_PATH.read_text()
    assert text.count('name = "dy"') == 1
    bad = tmp_path / "op.toml"
    bad.write_text(text.replace('name = "dy"', rename))
    assert main(["gen", "--check", "--op-def", str(bad), "--root", str(tmp_path)]) == 2
    assert error_line(capsys).endswith(f"is not a valid operator definition ({bad}: {says})")


def test_gen_names_a_directory_in_an_outputs_place_as_itself(tmp_path, capsys):
    assert main(["gen", "--root", str(tmp_path), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["written"]
    blocked = tmp_path / written[0]
    blocked.unlink()
    blocked.mkdir()
    assert main(["gen", "--root", str(tmp_path)]) == 2
    line = error_line(capsys)
    assert line.endswith(f"(Is a directory: {blocked})") and f".{blocked.name}." not in line
    assert blocked.is_dir()
