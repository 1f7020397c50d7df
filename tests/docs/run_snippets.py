# SPDX-License-Identifier: BSD-3-Clause
"""Runs the Python snippets of one Markdown file, in order, each in a fresh namespace of one interpreter
(so torch is imported once a file): `python run_snippets.py < snippets.json`, a list of
{"where": "path:line", "code": ...}. Prints one JSON object: per snippet its `where`, what it printed
and the traceback when it raised. A snippet's failure does not stop the next one."""
from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback


def run(snippet: dict) -> dict:
    printed = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(snippet["code"], snippet["where"], "exec"), {"__name__": "__main__"})
    except BaseException:  # noqa: BLE001 - a SystemExit or KeyboardInterrupt of a snippet is its failure too
        error = traceback.format_exc()
    return {"where": snippet["where"], "printed": printed.getvalue(), "error": error}


def main() -> None:
    results = [run(s) for s in json.load(sys.stdin)]
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
