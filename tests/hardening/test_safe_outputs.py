# SPDX-License-Identifier: BSD-3-Clause
"""Output options onto what users point them at (fileio.write_output): a symlink is followed (its target
written atomically, the link kept), `-`, a FIFO, a character device and an open descriptor (a link into
/proc/self/fd, as /dev/stdout is) are written in place, anything else is refused in one sentence, and
nothing but a regular file is ever replaced. Every node is made in the test's temporary folder, never
the system's: a device node is a private copy of /dev/null's or /dev/full's numbers."""
from __future__ import annotations

import json
import os
import secrets
import stat
import threading
from pathlib import Path

import pytest

from rmsnorm_backward.cli import bench as bench_cli
from rmsnorm_backward.cli import main
from rmsnorm_backward.perf import report as perf_report

from cli_output import error_line

NULL, FULL, LOOP = os.makedev(1, 3), os.makedev(1, 7), os.makedev(7, 0)


def device(path: Path, numbers: int, kind: int = stat.S_IFCHR) -> Path:
    try:
        os.mknod(path, kind | 0o600, numbers)
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    return path


class Reader(threading.Thread):
    """Reads a FIFO to its end, as the other side of a pipe would."""

    def __init__(self, fifo: Path):
        super().__init__(daemon=True)
        self.fifo, self.data = fifo, b""
        self.start()

    def run(self):
        with open(self.fifo, "rb") as f:
            self.data = f.read()


@pytest.fixture
def report_text(monkeypatch):
    """`report` rendering a text of its own (this file tests where it goes, tests/perf what it says)."""
    text = f"# report {secrets.token_hex(8)}\n"
    monkeypatch.setattr(perf_report, "load_bench", lambda path, what="the bench report": {})
    monkeypatch.setattr(perf_report, "load", lambda path, what, keys: {})
    monkeypatch.setattr(perf_report, "render", lambda bench, sens, other=None: text)
    return ["report", "b.json", "s.json", "-o"], text.encode()


@pytest.fixture
def bench_json(monkeypatch):
    """`bench --json` on one case whose row is a random figure (the kernel's figures: tests/perf)."""
    figure = float(secrets.randbelow(10**6) + 1)
    monkeypatch.setattr(bench_cli, "run_case", lambda case, model, rng, anchor_kernel: {"modelled_us": figure})
    monkeypatch.setattr(bench_cli, "format_table", lambda rows, markdown: "the table")
    argv = ["bench", "--suite", "atb", "--max-elements", "60000", "--json"]
    return argv, figure


def check_content(command: str, fixture_value, data: bytes) -> None:
    if command == "report":
        assert data == fixture_value[1]
    else:
        report, _ = json.JSONDecoder().raw_decode(data.decode())  # (on stdout the table follows it)
        assert report["cases"][0]["modelled_us"] == fixture_value[1]


COMMANDS = ["report", "bench"]


@pytest.fixture
def command_and_value(request):
    return request.param, request.getfixturevalue({"report": "report_text", "bench": "bench_json"}[request.param])


def run_to(command_and_value, target) -> int:
    _, (argv, _) = command_and_value
    return main([*argv, str(target)])


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_is_followed_and_kept(command_and_value, dangling, tmp_path, capsys):
    real = tmp_path / "results" / "out.txt"
    real.parent.mkdir()
    if not dangling:
        real.write_text("old")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert run_to(command_and_value, link) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    check_content(command_and_value[0], command_and_value[1], real.read_bytes())
    assert sorted(p.name for p in real.parent.iterdir()) == ["out.txt"]


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
def test_a_fifo_is_written_in_place(command_and_value, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    assert run_to(command_and_value, fifo) == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    check_content(command_and_value[0], command_and_value[1], reader.data)


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
def test_a_link_to_standard_output_writes_to_the_descriptor(command_and_value, tmp_path, capfd):
    link = tmp_path / "stdout"  # what /dev/stdout is
    link.symlink_to("/proc/self/fd/1")
    assert run_to(command_and_value, link) == 0
    out = capfd.readouterr().out.encode()
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    command = command_and_value[0]
    check_content(command, command_and_value[1], out if command == "report" else out[out.index(b"{"):])


def test_report_to_dash_prints_the_markdown(report_text, capsysbinary):
    argv, text = report_text
    assert main([*argv, "-"]) == 0
    assert capsysbinary.readouterr().out == text
    assert not Path("-").exists()


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
def test_a_character_device_is_written_in_place_and_kept(command_and_value, tmp_path, capsys):
    node = device(tmp_path / "null", NULL)
    assert run_to(command_and_value, node) == 0
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == NULL


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
def test_a_full_device_is_one_sentence_and_exit_2(command_and_value, tmp_path, capsys):
    node = device(tmp_path / "full", FULL)
    assert run_to(command_and_value, node) == 2
    assert "No space left on device" in error_line(capsys)
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == FULL


@pytest.mark.parametrize("command_and_value", COMMANDS, indirect=True)
@pytest.mark.parametrize("kind", ["a block device", "a directory"])
def test_anything_else_is_refused_in_one_sentence_and_kept(command_and_value, kind, tmp_path, capsys):
    if kind == "a directory":
        (target := tmp_path / "folder").mkdir()
    else:
        target = device(tmp_path / "block", LOOP, stat.S_IFBLK)
    before = os.lstat(target)
    assert run_to(command_and_value, target) == 2
    line = error_line(capsys)
    assert str(target) in line and "." + target.name not in line, "named as itself, not a temporary file"
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


GOLDEN = ["golden", "--shape", "4,8", "--json", "--save-dir"]


@pytest.mark.parametrize("dangling", [False, True])
def test_save_dir_through_a_symlink_writes_where_it_points(dangling, tmp_path, capsys):
    real = tmp_path / "samples"
    if not dangling:
        real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert main([*GOLDEN, str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    case = json.loads((real / "case.json").read_text())
    assert case["shapes"]["x"] == [4, 8] and (real / "input" / "x.bin").stat().st_size == 4 * 8 * 4


@pytest.mark.parametrize("kind", ["fifo", "stdout", "char device", "-"])
def test_save_dir_onto_a_node_is_refused_and_the_node_kept(kind, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "stdout":
        target.symlink_to("/proc/self/fd/1")
    elif kind == "char device":
        device(target, NULL)
    else:
        target = Path("-")
    before = None if kind == "-" else os.lstat(target)
    assert main([*GOLDEN, str(target)]) == 2
    assert "'--save-dir'" in error_line(capsys)
    if before is None:
        assert not target.exists()
    else:
        after = os.lstat(target)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
