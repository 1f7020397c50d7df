# SPDX-License-Identifier: BSD-3-Clause
"""Comments, docstrings, test reasons and docs state the rule and its reason: no file in the tree names
an issue number (no reader of the repository can open one) or the work history of a branch (git keeps
the history). Every tracked text file is read; a hit fails naming its file and line."""
from __future__ import annotations

import re

import pytest

from markdown_files import ROOT, tracked

# "issue 17", "issue #3", "issue 6's", "issues 6 and 17"; not the verb ("pass 2 issues 7 instructions").
# "stop 3": a work session's stop.
ISSUE_NUMBER = re.compile(r"\bissue #?\d+\b(?! ?(?:vector|scalar|instructions?|cycles?|repeats?|cop(?:y|ies))\b)|"
                          r"\bissues #?\d+(?:,| and| or) #?\d+|\bstop \d+\b", re.I)
HISTORY = re.compile(r"\bonce (?:those|these|the) branch(?:es)? (?:is|are) merged\b|\bafter (?:the )?merge\b|"
                     r"\bwas \d[\d.]* (?:\w+ )?before\b|\bother branches of\b", re.I)


SELF = "tests/docs/test_wording.py"  # its examples below are what the scan must catch


def hits(path: str, text: str) -> list[str]:
    return [f"{path}:{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
            if ISSUE_NUMBER.search(line) or HISTORY.search(line)]


def text_of(path: str) -> str | None:
    data = (ROOT / path).read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_no_file_names_an_issue_number_or_past_work():
    files = [p for p in tracked() if p != SELF]
    if not files:
        pytest.skip("the tree's files are listed by git, in a checkout")
    found = [h for p in files if (text := text_of(p)) is not None for h in hits(p, text)]
    assert not found, "state the rule and its reason instead:\n" + "\n".join(found)


@pytest.mark.parametrize("line", ["see issue 17", "issues 6 and 17", "issue #3", "(issue 6's rule)", "at stop 4",
                                  "the table is complete once those branches are merged", "= after merge",
                                  "the launch, which was 3 us before"])
def test_the_scan_catches(line):
    assert hits("f", line) == [f"f:1: {line}"]


@pytest.mark.parametrize("line", ["pass 1 issues 4 vector instructions", "pass 2 issues 7 (fp32: 2)",
                                  "S issues everything in order", "a stop of the pipeline", "the issue cost"])
def test_the_scan_passes(line):
    assert hits("f", line) == []
