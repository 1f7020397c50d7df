# SPDX-License-Identifier: BSD-3-Clause
"""docs/cli.md's reference blocks against the click app and the code: every option of the synopsis
exists for its command and every option is in it, the sample-directory layout is sample_dir's own, and the case.json example is
what `golden --save-dir` writes."""
from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from markdown_files import ROOT, blocks
from rmsnorm_backward.cli import cli, main, sample_dir


@pytest.fixture
def cli_doc() -> list:
    if ROOT is None:
        pytest.skip("docs/ is in the source checkout")
    return blocks("docs/cli.md")


def synopsis(cli_doc) -> dict[str, set[str]]:
    """The options each command's synopsis line (and its indented continuation) names."""
    text = next(b.code for b in cli_doc if b.language == "text" and b.code.startswith("rmsnorm-backward "))
    named, command = {}, None
    for line in text.splitlines():
        head = re.match(r"^rmsnorm-backward (\w+)", line)
        command = head.group(1) if head else command
        named.setdefault(command, set()).update(re.findall(r"(?<![\w-])(-{1,2}[A-Za-z][\w-]*)", line))
    return named


def test_synopsis_names_every_command_and_only_real_options(cli_doc):
    named = synopsis(cli_doc)
    assert set(cli.commands) <= set(named)
    for command, options in named.items():
        if command in cli.commands:
            real = {o for p in cli.commands[command].params if isinstance(p, click.Option)
                    for o in (*p.opts, *p.secondary_opts)}
            assert options - {"--help", "--version"} == real, command


def test_sample_layout_is_sample_dir_s(cli_doc):
    layout = next(b.code for b in cli_doc if b.language == "text" and b.code.startswith("D/case.json"))
    documented = sample_dir.__doc__.split("\b\n", 1)[1].split("\n\n", 1)[0]
    assert layout.splitlines() == [line.strip() and line[4:] for line in documented.splitlines()]


def test_case_json_example_is_what_golden_writes(cli_doc, tmp_path):
    example = json.loads(next(b.code for b in cli_doc if b.language == "json"))
    assert main(["golden", "--shape", "4,64", "--save-dir", str(tmp_path / "d")]) == 0
    written = json.loads(Path(tmp_path / "d" / "case.json").read_text())
    for key, value in example.items():
        if key == "files":
            assert all(written["files"][name] == entry for name, entry in value.items())
        else:
            assert written[key] == value, key
