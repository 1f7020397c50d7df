# SPDX-License-Identifier: BSD-3-Clause
"""What the CLI tests read from rmsnorm-backward's output: its JSON report, its one error sentence."""
from __future__ import annotations

import json

from rmsnorm_backward.cli import main


def run_json(capsys, *argv) -> tuple[int, dict]:
    """The exit status and the JSON report of `rmsnorm-backward *argv --json`."""
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def error_line(capsys) -> str:
    """click's error output: at most its usage and hint lines, then one `Error: <sentence>` line."""
    *hint, error = capsys.readouterr().err.strip().splitlines()
    assert [line for line in hint if line and not line.startswith(("Usage: ", "Try "))] == []
    assert error.startswith("Error: ") and error.count(". ") == 0
    return error
