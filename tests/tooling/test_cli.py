# SPDX-License-Identifier: BSD-3-Clause
"""The rmsnorm-backward command: golden on the twin (pass, fail, sample directories), bad options as
click's one `Error:` sentence with exit 2, --help, --version and shell completion, atomic writes
(no sample directory is left by a failure), and doctor (torch_npu only ever in a subprocess)."""
import json
import os
import sys

import numpy as np
import pytest

from rmsnorm_backward import backends
from rmsnorm_backward.cli import COMMANDS, main
from rmsnorm_backward.cli import sample_dir
from rmsnorm_backward.fileio import write_atomic

from cli_output import error_line, run_json


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

    def fake_run(name, dy, x, rstd, gamma, dres, *, soc, gamma_offset):
        seen.update(dy=dy.shape, x=x.shape, rstd=rstd.shape, gamma=gamma.shape, dtype=x.dtype, soc=soc,
                    gamma_offset=gamma_offset)
        raise KeyboardInterrupt  # stop before computing: only the inputs are under test

    monkeypatch.setattr(backends, "run", fake_run)
    assert main(["golden"]) == 130
    assert seen == {"dy": (32, 64, 128), "x": (32, 64, 128), "rstd": (32, 64, 1), "gamma": (128,),
                    "dtype": np.float32, "soc": "Ascend910B2", "gamma_offset": 0.0}


def test_golden_exits_non_zero_when_the_result_is_wrong(capsys, monkeypatch):
    real_run = backends.run

    def off_by_one_percent(name, dy, x, rstd, gamma, dres, **options):
        dx, dgamma, details = real_run(name, dy, x, rstd, gamma, dres, **options)
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


def test_from_dir_needs_its_case_json_and_names_it(capsys, tmp_path):
    d = tmp_path / "case"
    assert main(["golden", "--shape", "5,32", "--save-dir", str(d), "--json"]) == 0
    capsys.readouterr()
    (d / "case.json").unlink()
    assert main(["golden", "--from-dir", str(d)]) == 2
    assert error_line(capsys) == (f"Error: --from-dir {d} has no case.json ({d}/case.json is missing): "
                                  "make samples with --save-dir")


@pytest.mark.parametrize("given", [["--shape", "5,32"], ["--dtype", "fp16"], ["--rstd-flat", "--seed", "4"],
                                   ["--gamma-dims", "1"]])
def test_from_dir_refuses_the_options_its_case_json_replaces(capsys, tmp_path, given):
    assert main(["golden", "--shape", "5,32", "--save-dir", str(tmp_path / "case"), "--json"]) == 0
    capsys.readouterr()
    assert main(["golden", "--from-dir", str(tmp_path / "case"), *given]) == 2
    flags = ", ".join(a for a in given if a.startswith("--"))
    assert error_line(capsys) == f"Error: --from-dir takes the case from its case.json: drop {flags}"


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_case_json_records_the_dtype_and_shape_of_every_file(capsys, tmp_path, dtype):
    d = tmp_path / "case"
    assert main(["golden", "--shape", "3,2,24", "--gamma-dims", "2", "--dtype", dtype, "--save-dir", str(d),
                 "--json"]) == 0
    capsys.readouterr()
    files = json.loads((d / "case.json").read_text())["files"]
    on_disk = sorted(str(p.relative_to(d)) for p in d.rglob("*.bin"))
    assert sorted(files) == on_disk and len(on_disk) == 8
    name = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[dtype]
    want = {"dy": name, "x": name, "rstd": "float32", "gamma": name, "dx": name, "dgamma": "float32"}
    for path, entry in files.items():
        tensor = entry["tensor"]
        assert entry["dtype"] == ("float64" if "golden_" in path else want[tensor]), path
        itemsize = 8 if entry["dtype"] == "float64" else np.dtype(entry["dtype"].replace("b", "")).itemsize
        assert (d / path).stat().st_size == int(np.prod(entry["shape"])) * itemsize, path
    assert files["output/golden_dgamma.bin"]["shape"] == [2, 24] and files["input/rstd.bin"]["shape"] == [3, 1, 1]


def test_malformed_case_json_is_one_sentence(capsys, tmp_path):
    (tmp_path / "case.json").write_text('{"op": "RmsNormBackward", "shapes": {"x": [4, 8]}, "dtypes": {"x": "float32"}}')
    assert main(["golden", "--from-dir", str(tmp_path)]) == 2
    assert error_line(capsys) == (f"Error: {tmp_path}/case.json is not a valid case description "
                                  "(no shape or dtype for dy, rstd, dx, dgamma)")  # gamma is optional


@pytest.mark.parametrize("argv,attrs,has_gamma", [
    (["--gamma-offset", "1", "--dtype", "bf16"], {"gamma_offset": 1.0}, True),
    (["--no-gamma", "--dtype", "fp16"], {"gamma_offset": 0.0}, False),
    (["--no-gamma", "--gamma-dims", "2", "--shape", "3,5,40"], {"gamma_offset": 0.0}, False),
    (["--residual", "--dtype", "bf16", "--gamma-offset", "0.5"], {"gamma_offset": 0.5}, True),
    (["--residual", "--no-gamma", "--shape", "3,9000"], {"gamma_offset": 0.0}, False),
    (["--gamma-dtype", "fp32", "--dtype", "bf16", "--shape", "3,9000"], {"gamma_offset": 0.0}, True),
])
def test_golden_forms_pass_and_round_trip_through_a_sample_dir(capsys, tmp_path, argv, attrs, has_gamma):
    code, report = run_json(capsys, "golden", "--shape", "6,300", *argv, "--save-dir", str(tmp_path / "s"))
    assert code == 0 and report["passed"] and report["attrs"] == attrs
    assert report["dtypes"].get("gamma") == ("float32" if "--gamma-dtype" in argv else report["dtypes"]["x"]
                                             if has_gamma else None)
    assert ("gamma" in report["shapes"]) == has_gamma and (report["shapes"]["dgamma"] == [0]) != has_gamma
    case = json.loads((tmp_path / "s" / "case.json").read_text())
    assert case["attrs"] == attrs and (tmp_path / "s" / "input" / "gamma.bin").exists() == has_gamma
    assert (tmp_path / "s" / "input" / "dres.bin").exists() == ("--residual" in argv) == ("dres" in report["shapes"])
    code, again = run_json(capsys, "golden", "--from-dir", str(tmp_path / "s"))
    assert code == 0 and again["attrs"] == attrs and again["reports"] == report["reports"]


@pytest.mark.parametrize("argv,message", [
    (["--no-gamma", "--gamma-offset", "0.5"],
     "Error: Invalid value for '--gamma-offset': gamma_offset must be 0 without gamma (got 0.5); drop it or --no-gamma"),
    (["--gamma-offset", "inf"],
     "Error: Invalid value for '--gamma-offset': gamma_offset must be finite in float32 (got inf)."),
    (["--dtype", "fp32", "--gamma-dtype", "bf16"],
     "Error: --gamma-dtype bf16 with --dtype fp32: gamma must have the dtype of x, or be float32 (gamma bfloat16, "
     "x float32)."),
    (["--no-gamma", "--gamma-dtype", "fp32"], "Error: --gamma-dtype needs a gamma: drop it or --no-gamma"),
])
def test_golden_form_refusals_are_one_sentence(capsys, argv, message):
    assert main(["golden", "--shape", "4,64", *argv]) == 2
    assert error_line(capsys) == message


@pytest.mark.parametrize(("argv", "message"), [
    (["--shape", "32,x"], "Invalid value for '--shape': must be non-negative integers separated by commas, like "
                          "32,64,128 (got '32,x')"),
    (["--shape", "64"], "Invalid value for '--shape': needs at least 2 dims: the rows and the dims of gamma (got '64')"),
    (["--shape", "2,3,4,5,6,7,8,9,2", "--gamma-dims", "3"],
     "--shape 2,3,4,5,6,7,8,9,2 --gamma-dims 3: x must have rank 1 to 8 (got rank 9)."),
    (["--shape", "32,64", "--gamma-dims", "2"], "Invalid value for '--gamma-dims': must be from 1 to 1 for a 2-D "
                                                "--shape (got 2)"),
    (["--gamma-dims", "0"], "Invalid value for '--gamma-dims': 0 is not in the range x>=1."),
    (["--from-dir", "/nonexistent/dir"], "Invalid value for '--from-dir': Directory '/nonexistent/dir' does not exist."),
    (["--shape", "4,64", "--soc", "Ascend310P"], "Invalid value for '--soc': soc must be one of the supported SoCs"),
    (["--seed", "-3"], "Invalid value for '--seed': -3 is not in the range x>=0."),
    (["--dtype", "int8"], "Invalid value for '--dtype': 'int8' is not one of 'fp16', 'fp32', 'bf16'."),
    (["--backend", "gpu"], "Invalid value for '--backend': 'gpu' is not one of 'auto', 'twin', 'npu'."),
    (["--no-such-option"], "No such option"),
])
def test_bad_golden_options_are_one_sentence_and_exit_2(capsys, argv, message):
    assert main(["golden", *argv]) == 2
    assert error_line(capsys).startswith(f"Error: {message}")


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_command_has_help_and_json(capsys, command):
    argv = [command] if command else []
    for flag in ("--help", "-h"):
        assert main(argv + [flag]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"Usage: rmsnorm-backward {command + ' ' if command else ''}[OPTIONS]")
        assert ("--json" in out) if command else all(name in out for name in COMMANDS)


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"rmsnorm-backward, version {version('rmsnorm-backward')}\n"


@pytest.mark.parametrize(("words", "cword", "want"), [
    ("rmsnorm-backward go", 1, "plain,golden"),
    ("rmsnorm-backward golden --dt", 2, "plain,--dtype"),
    ("rmsnorm-backward golden --dtype b", 3, "plain,bf16"),
])
def test_shell_completion(monkeypatch, capsys, words, cword, want):
    monkeypatch.setenv("_RMSNORM_BACKWARD_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(cword))
    with pytest.raises(SystemExit) as e:  # click answers the shell and exits before any command runs
        main([])
    assert e.value.code == 0
    assert capsys.readouterr().out.split() == [want]


def test_shell_completion_script(monkeypatch, capsys):
    monkeypatch.setenv("_RMSNORM_BACKWARD_COMPLETE", "bash_source")
    with pytest.raises(SystemExit):
        main([])
    script = capsys.readouterr().out
    assert "_rmsnorm_backward_completion()" in script and "complete -o nosort -F" in script


def test_save_dir_is_new_or_empty_and_never_the_from_dir(capsys, tmp_path):
    d = tmp_path / "case"
    assert main(["golden", "--shape", "4,16", "--save-dir", str(d), "--json"]) == 0
    capsys.readouterr()
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    assert main(["golden", "--shape", "4,16", "--save-dir", str(d)]) == 2
    assert error_line(capsys) == (f"Error: Invalid value for '--save-dir': {d} exists and is not an empty directory; "
                                  "name a new one")
    assert main(["golden", "--from-dir", str(d), "--save-dir", str(d)]) == 2
    assert error_line(capsys) == "Error: Invalid value for '--save-dir': must not be the --from-dir directory it reads"
    assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == before
    (tmp_path / "empty").mkdir()
    assert main(["golden", "--from-dir", str(d), "--save-dir", str(tmp_path / "empty"), "--json"]) == 0
    assert (tmp_path / "empty" / "output" / "golden_dx.bin").read_bytes() == before[d / "output" / "golden_dx.bin"]


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
@pytest.mark.parametrize("after", [0, 5])
def test_failed_or_interrupted_save_dir_leaves_no_directory(capsys, tmp_path, monkeypatch, failure, after):
    # The sample writer asks for each file's dtype just before writing it: fail there, `after` files in.
    real_dtype, asked = sample_dir.numpy_dtype, []

    def dtype_then_fail(name):
        if len(asked) == after:
            raise failure() if failure is KeyboardInterrupt else OSError(28, "No space left on device", "x.bin")
        asked.append(name)
        return real_dtype(name)

    monkeypatch.setattr(sample_dir, "numpy_dtype", dtype_then_fail)
    d = tmp_path / "out" / "case"
    assert main(["golden", "--shape", "4,64", "--save-dir", str(d)]) == (130 if failure is KeyboardInterrupt else 2)
    assert len(asked) == after
    assert not d.exists() and list((tmp_path / "out").iterdir()) == []
    err = capsys.readouterr().err
    assert ("rmsnorm-backward: interrupted" in err) if failure is KeyboardInterrupt else (
        f"Error: --save-dir {d} cannot be written (No space left on device: x.bin)" in err)


def test_save_dir_in_a_read_only_folder_is_one_sentence_before_the_run(capsys, read_only_dir, monkeypatch):
    monkeypatch.setattr(backends, "run", lambda *a, **k: pytest.fail("the run started before --save-dir was checked"))
    assert main(["golden", "--shape", "4,64", "--save-dir", str(read_only_dir / "case")]) == 2
    assert error_line(capsys).startswith(f"Error: --save-dir {read_only_dir / 'case'} cannot be written (")


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
