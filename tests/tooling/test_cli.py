"""The rmsnorm-backward command: golden on the twin (pass, fail, sample directories), bad options as
one sentence, --help everywhere, atomic writes, and doctor (torch_npu only ever in a subprocess)."""
import json
import os
import sys

import numpy as np
import pytest

from rmsnorm_backward import backends
from rmsnorm_backward.cli import COMMANDS, main
from rmsnorm_backward.cli._common import write_atomic


def run_json(capsys, *argv) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("argv", [
    ["--shape", "7,65", "--dtype", "fp16", "--seed", "3"],
    ["--shape", "3,5,7,16", "--gamma-dims", "2", "--dtype", "bf16"],
    ["--shape", "2,130", "--dtype", "fp32", "--seed", "9", "--rstd-flat"],
])
def test_golden_passes_on_the_twin(capsys, argv):
    code, report = run_json(capsys, "golden", *argv)
    assert code == 0 and report["passed"]
    assert report["backend"] == "twin"
    assert report["reports"]["dx"]["size"] == int(np.prod([int(d) for d in argv[1].split(",")]))
    assert report["reports"]["dgamma"]["dtype"] == "float32"
    shape = [int(d) for d in argv[1].split(",")]
    k = int(argv[argv.index("--gamma-dims") + 1]) if "--gamma-dims" in argv else 1
    assert report["shapes"]["rstd"] == shape[:-k] + ([] if "--rstd-flat" in argv else [1] * k)


def test_golden_defaults_are_the_operator_texts_example(capsys, monkeypatch):
    seen = {}

    def fake_run(name, dy, x, rstd, gamma, *, soc):
        seen.update(dy=dy.shape, x=x.shape, rstd=rstd.shape, gamma=gamma.shape, dtype=x.dtype, soc=soc)
        raise KeyboardInterrupt  # stop before computing: only the inputs are under test

    monkeypatch.setattr(backends, "run", fake_run)
    assert main(["golden"]) == 130
    assert seen == {"dy": (32, 64, 128), "x": (32, 64, 128), "rstd": (32, 64, 1), "gamma": (128,),
                    "dtype": np.float32, "soc": "Ascend910B2"}


def test_golden_exits_non_zero_when_the_result_is_wrong(capsys, monkeypatch):
    real_run = backends.run

    def off_by_one_percent(name, dy, x, rstd, gamma, *, soc):
        dx, dgamma, details = real_run(name, dy, x, rstd, gamma, soc=soc)
        return (dx * np.float32(1.01)).astype(dx.dtype), dgamma, details

    monkeypatch.setattr(backends, "run", off_by_one_percent)
    code, report = run_json(capsys, "golden", "--shape", "4,64")
    assert code == 1 and not report["passed"]
    assert not report["reports"]["dx"]["passed"] and report["reports"]["dgamma"]["passed"]


def test_save_dir_then_from_dir_round_trips_and_uses_the_saved_golden(capsys, tmp_path):
    d = tmp_path / "case"
    code, first = run_json(capsys, "golden", "--shape", "6,48", "--dtype", "fp16", "--save-dir", str(d))
    assert code == 0
    for name in ("input/dy.bin", "input/x.bin", "input/rstd.bin", "input/gamma.bin", "output/golden_dx.bin",
                 "output/golden_dgamma.bin", "output/output_dx.bin", "output/output_dgamma.bin", "case.json"):
        assert (d / name).is_file()
    assert not [p for p in d.rglob(".*")]  # no temporary files left behind
    assert np.fromfile(d / "input/x.bin", np.float16).size == 6 * 48

    code, again = run_json(capsys, "golden", "--from-dir", str(d))
    assert code == 0 and again["reports"] == first["reports"]

    golden_dx = np.fromfile(d / "output/golden_dx.bin", np.float64)
    (golden_dx * 1.1).tofile(d / "output/golden_dx.bin")
    code, tampered = run_json(capsys, "golden", "--from-dir", str(d))
    assert code == 1 and not tampered["reports"]["dx"]["passed"]


def test_from_dir_without_case_json_reads_the_shape_from_options(capsys, tmp_path):
    d = tmp_path / "case"
    assert main(["golden", "--shape", "5,32", "--save-dir", str(d), "--json"]) == 0
    capsys.readouterr()
    (d / "case.json").unlink()
    assert main(["golden", "--from-dir", str(d), "--shape", "5,32", "--json"]) == 0
    capsys.readouterr()
    assert main(["golden", "--from-dir", str(d), "--shape", "5,16"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"rmsnorm-backward golden: {d}/input/dy.bin has 640 bytes; shape [5, 16] of float32 needs 320"


def test_malformed_case_json_is_one_sentence(capsys, tmp_path):
    (tmp_path / "case.json").write_text('{"shapes": {"x": [4, 8]}, "dtypes": {"x": "float32"}}')
    assert main(["golden", "--from-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"rmsnorm-backward golden: {tmp_path}/case.json is not a valid case description "
                   "(no shape or dtype for dy, rstd, gamma, dx, dgamma)")


@pytest.mark.parametrize(("argv", "message"), [
    (["--shape", "32,x"], "--shape must be non-negative integers separated by commas, like 32,64,128 (got '32,x')"),
    (["--shape", "64"], "--shape needs at least 2 dims: the rows and the dims of gamma (got '64')"),
    (["--shape", "2,3,4,5,6,7,8,9,2", "--gamma-dims", "3"], "rank"),
    (["--shape", "32,64", "--gamma-dims", "2"], "--gamma-dims must be from 1 to 1 for a 2-D --shape (got 2)"),
    (["--from-dir", "/nonexistent/dir"], "--from-dir /nonexistent/dir is not a directory"),
    (["--shape", "4,64", "--soc", "Ascend310P"], "soc"),
])
def test_bad_golden_options_are_one_sentence(capsys, argv, message):
    assert main(["golden", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rmsnorm-backward golden: ") and message in err[0]


def test_unknown_choice_is_one_sentence_and_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["golden", "--dtype", "int8"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'int8'" in err[0]


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_command_has_help_and_json(capsys, command):
    with pytest.raises(SystemExit) as e:
        main(([command] if command else []) + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: rmsnorm-backward" in out
    if command:
        assert "--json" in out


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomic(target, b"new contents")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_doctor_names_the_twin_as_the_usable_backend(capsys, monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    code, found = run_json(capsys, "doctor")
    assert code == 0
    by_name = {b["name"]: b for b in found["backends"]}
    assert by_name["twin"]["usable"]
    if found["cann"]["path"] is None:
        assert not by_name["npu"]["usable"] and "CANN not found" in by_name["npu"]["detail"]
        assert by_name["npu"]["next_step"]
    assert found["compilers"]["g++"]["found"]
    assert main(["doctor"]) == 0
    assert "golden runs on: twin" in capsys.readouterr().out


def test_doctor_probes_torch_npu_in_a_subprocess_only(capsys, monkeypatch, tmp_path):
    # A CANN directory and a torch_npu that ends its process on import, as the real one does when
    # CANN's libraries are missing: doctor must report it and carry on.
    cann = tmp_path / "cann"
    (cann / "include" / "acl").mkdir(parents=True)
    (cann / "include" / "acl" / "acl.h").write_text("")
    fake = tmp_path / "site"
    (fake / "torch_npu").mkdir(parents=True)
    (fake / "torch_npu" / "__init__.py").write_text("import sys\nsys.stderr.write('libascendcl.so not found\\n')\nsys.exit(3)\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    backends.probe_npu.cache_clear()
    try:
        code, found = run_json(capsys, "doctor")
    finally:
        backends.probe_npu.cache_clear()
    assert code == 0
    assert found["cann"]["path"] == str(cann)
    assert found["torch_npu"] == {"ok": False, "error": "libascendcl.so not found"}
    npu = {b["name"]: b for b in found["backends"]}["npu"]
    assert not npu["usable"] and "torch_npu does not import: libascendcl.so not found" in npu["detail"]
    assert "torch_npu" not in sys.modules
