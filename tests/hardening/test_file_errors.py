# SPDX-License-Identifier: BSD-3-Clause
"""File and environment errors of the CLI and of the Python API under it, beyond the bad-input table's
rows (tests/hardening/test_bad_inputs.py): files the system refuses to read (tests run as root,
where permission bits refuse nothing, so the refusal is the reader's open failing as it would), a
sample directory without golden, gen's --op-def that is a FIFO or unreadable, an OSError no check
named. Each is one sentence naming the file and
the rule with exit 2 from the CLI, and EnvironmentSetupError / InvalidInputError from the API."""
from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rmsnorm_backward import backends, op_def
from rmsnorm_backward.cli import main, sample_dir
from rmsnorm_backward.errors import EnvironmentSetupError


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sample") / "case"
    assert main(["golden", "--shape", "4,8", "--save-dir", str(d), "--json"]) == 0
    return d


def refuse_reading(monkeypatch, name: str):
    """The sample reader's open of `name` fails with EACCES, as for a file the user may not read."""
    def guarded(path, *args, **kwargs):
        if Path(path).name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(sample_dir, "open", guarded, raising=False)


@pytest.mark.parametrize("name, where", [("x.bin", "input/x.bin"), ("case.json", "case.json"),
                                         ("golden_dgamma.bin", "output/golden_dgamma.bin")])
def test_an_unreadable_file_is_one_sentence_and_exit_2(capsys, monkeypatch, sample, name, where):
    refuse_reading(monkeypatch, name)
    assert main(["golden", "--from-dir", str(sample), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.strip().splitlines()[-1] == f"Error: {sample / where} cannot be read (Permission denied)"


def test_the_api_raises_environment_setup_error_for_an_unreadable_input(monkeypatch, sample):
    refuse_reading(monkeypatch, "dy.bin")
    case = sample_dir.read_case(sample, "Ascend910B2")
    with pytest.raises(EnvironmentSetupError, match=r"input/dy\.bin cannot be read \(Permission denied\)$"):
        sample_dir.read_inputs(sample, case)


def test_without_golden_files_the_golden_is_computed_and_said_so(tmp_path, sample):
    d = tmp_path / "case"
    subprocess.run(["cp", "-r", str(sample), str(d)], check=True)
    for p in (d / "output").glob("golden_*.bin"):
        p.unlink()
    done = subprocess.run([sys.executable, "-m", "rmsnorm_backward.cli", "golden", "--from-dir", str(d), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["golden"] == "computed"
    assert f"{d / 'output'} holds no golden_*.bin: computing the float64 golden" in done.stderr


def test_an_os_error_no_check_named_is_still_one_sentence(capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError(5, "Input/output error", "/dev/some-device")

    monkeypatch.setattr(backends, "run", fail)
    assert main(["golden", "--shape", "4,8"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.strip().splitlines()[-1] == "Error: /dev/some-device cannot be used (Input/output error)"


def test_gen_refuses_a_fifo_op_def_without_blocking(capsys, tmp_path):
    fifo = tmp_path / "op_def.toml"
    os.mkfifo(fifo)
    assert main(["gen", "--check", "--op-def", str(fifo)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"Error: Invalid value for '--op-def': {fifo} is not a regular file")


def test_gen_names_an_unreadable_op_def(capsys, monkeypatch, tmp_path):
    path = tmp_path / "op_def.toml"
    path.write_text(op_def.DEFAULT_PATH.read_text())

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(op_def, "load", refuse)
    assert main(["gen", "--check", "--op-def", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"Error: Invalid value for '--op-def': {path} cannot be read (Permission denied)")


def test_cxx_naming_no_compiler_does_not_make_the_twin_unusable(capsys, monkeypatch):
    # The twin always runs plain g++ (it never reads CXX): the check names and looks for that one.
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    twin = backends.twin_backend()
    assert twin.usable, twin.detail
    assert main(["golden", "--shape", "4,8", "--backend", "twin", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"]


def test_without_g_plus_plus_on_path_the_twin_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CXX", "/usr/bin/g++")  # set or not, the twin runs the g++ on PATH
    twin = backends.twin_backend()
    assert not twin.usable and twin.detail == "no g++ on PATH (the twin compiles kernels with g++)"


def test_running_out_of_memory_is_exit_2_in_one_sentence(capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(backends, "run", exhausted)
    assert main(["golden", "--shape", "4,8"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.strip().splitlines()[-1] == "Error: ran out of host memory; use smaller shapes"
