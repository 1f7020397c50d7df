# SPDX-License-Identifier: BSD-3-Clause
"""What the command line refuses in one sentence with exit 2: options that describe a case the
operator's tiling refuses (the sentence starts with the options as typed, by the kind of the rule),
a sample directory whose case.json describes one, and doctor with an ASCEND_HOME_PATH that names no
CANN toolkit."""
import json
import subprocess
import sys

import pytest

from rmsnorm_backward import backends
from rmsnorm_backward.cli import main
from rmsnorm_backward.cli._common import refusal
from rmsnorm_backward.errors import InvalidInputError, TilingError

from cli_output import error_line, run_json

GAMMA_DTYPE = "gamma must have the dtype of x, or be float32"


@pytest.mark.parametrize(("argv", "typed", "rule"), [
    (["--shape", "4,0"], "--shape 4,0", "gamma must have 1 to 2^30 elements (got 0)."),
    (["--shape", "6,16,0", "--gamma-dims", "2"], "--shape 6,16,0 --gamma-dims 2",
     "gamma must have 1 to 2^30 elements (got 0)."),
    (["--shape", "3,2147483648", "--rstd-flat"], "--shape 3,2147483648 --rstd-flat",
     "gamma must have 1 to 2^30 elements (got 2147483648)."),
    (["--shape", "1,2,1,2,1,2,1,2,1,2"], "--shape 1,2,1,2,1,2,1,2,1,2", "x must have rank 1 to 8 (got rank 10)."),
    (["--shape", "2,9223372036854775808"], "--shape 2,9223372036854775808",
     "dy's shape [2, 9223372036854775808] has a dim that does not fit in int64."),
    (["--shape", "3000000000,65536"], "--shape 3000000000,65536", "golden on x [3000000000, 65536] float32 needs about"),
], ids=["no-gamma-elements", "gamma-dims", "gamma-too-long", "rank-10", "beyond-int64", "host-memory"])
def test_a_refused_shape_names_the_shape_options(capsys, argv, typed, rule):
    assert main(["golden", *argv]) == 2
    assert error_line(capsys).startswith(f"Error: {typed}: {rule}")


@pytest.mark.parametrize(("argv", "typed", "names"), [
    (["--gamma-dtype", "fp16"], "--gamma-dtype fp16", "(gamma float16, x float32)."),
    (["--dtype", "fp16", "--gamma-dtype", "bf16"], "--gamma-dtype bf16 with --dtype fp16", "(gamma bfloat16, x float16)."),
    (["--dtype", "bf16", "--gamma-dtype", "fp16", "--residual"], "--gamma-dtype fp16 with --dtype bf16",
     "(gamma float16, x bfloat16)."),
])
def test_a_refused_dtype_names_the_dtype_options(capsys, argv, typed, names):
    assert main(["golden", "--shape", "8,96", *argv]) == 2
    assert error_line(capsys) == f"Error: {typed}: {GAMMA_DTYPE} {names}"


@pytest.mark.parametrize(("kind", "tensor", "typed"), [
    ("shape", "rstd", "--shape 4,8"), ("dtype", "x", "--dtype fp16"), ("dtype", "gamma", "--gamma-dtype bf16"),
    ("attr", "gamma_offset", "--gamma-offset 1.0"), ("platform", "", "--soc Ascend910B3"),
])
def test_refusal_picks_the_option_by_kind_then_tensor(kind, tensor, typed):
    options = {"shape": "--shape 4,8", "dtype": "--dtype fp16", "dtype:gamma": "--gamma-dtype bf16",
               "attr": "--gamma-offset 1.0", "platform": "--soc Ascend910B3"}
    error = refusal(TilingError("the rule.", kind, tensor), options)
    assert (error.exit_code, error.message) == (2, f"{typed}: the rule.")
    assert refusal(TilingError("the rule.", "output", "dx"), options).message == "the rule."
    assert refusal(InvalidInputError("too big."), options).message == "--shape 4,8: too big."


def test_a_case_json_the_tiling_refuses_is_named(capsys, tmp_path):
    d = tmp_path / "s"
    assert main(["golden", "--shape", "4,64", "--save-dir", str(d), "--json"]) == 0
    capsys.readouterr()
    case = json.loads((d / "case.json").read_text())
    case["dtypes"]["gamma"] = case["files"]["input/gamma.bin"]["dtype"] = "float16"
    (d / "case.json").write_text(json.dumps(case))
    assert main(["golden", "--from-dir", str(d)]) == 2
    assert error_line(capsys) == f"Error: {d / 'case.json'}: {GAMMA_DTYPE} (gamma float16, x float32)."


def test_the_program_prints_the_sentence_not_a_traceback():
    done = subprocess.run([sys.executable, "-m", "rmsnorm_backward.cli", "golden", "--shape", "5,0"],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "Error: --shape 5,0: gamma must have 1 to 2^30 elements (got 0).\n"


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
def test_find_cann_says_why_ascend_home_path_is_no_toolkit(monkeypatch, tmp_path, kind):
    path = tmp_path / kind
    if kind == "file":
        path.write_text("")
    elif kind == "empty":
        path.mkdir()
    monkeypatch.setenv("ASCEND_HOME_PATH", str(path))
    why = {"missing": "does not exist", "file": "is not a directory",
           "empty": "holds no CANN toolkit (neither include/acl/acl.h nor compiler/)"}[kind]
    found = backends.find_cann()
    assert found["env_problem"].startswith(f"ASCEND_HOME_PATH is {path}, which {why}; ")
    assert found["looked"][0] == str(path)
    (path.parent / "cann" / "compiler").mkdir(parents=True)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(path.parent / "cann"))
    assert backends.find_cann()["env_problem"] is None


def test_doctor_refuses_an_ascend_home_path_without_cann(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "no-cann"))
    assert main(["doctor"]) == 2
    out, err = capsys.readouterr()
    assert "golden runs on: twin" in out  # the report first, then the sentence
    sentence = f"ASCEND_HOME_PATH is {tmp_path / 'no-cann'}, which does not exist; point it at CANN's install"
    assert err.startswith(f"Error: {sentence}") and err.count("\n") == 1
    code, found = run_json(capsys, "doctor")
    assert code == 2 and found["cann"]["env_problem"].startswith(sentence)
