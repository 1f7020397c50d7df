# SPDX-License-Identifier: BSD-3-Clause
"""The repository's Markdown files and their fenced code blocks, for the doc tests.

A file counts when git tracks it or would (new and not ignored); without git (an unpacked sdist) the
tests that need the files skip. Every fenced block names its language, and the doc tests give each
language its check: python runs, sh is parsed and checked (and run when cheap), cpp compiles, json
parses, text is prose.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rmsnorm_backward import resources

ROOT = resources.checkout()
LANGUAGES = ("python", "sh", "cpp", "json", "text")
FENCE = re.compile(r"^(`{3,})(\S*)")


@dataclass(frozen=True)
class Block:
    path: str      # relative to the checkout
    line: int      # of the opening fence, 1-based
    language: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@lru_cache(maxsize=None)
def tracked(*patterns: str) -> tuple[str, ...]:
    """Paths (relative to the checkout) git tracks or would track, matching `patterns`; () without git."""
    if ROOT is None or shutil.which("git") is None or not (ROOT / ".git").exists():
        return ()
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z",
                           "--", *patterns], capture_output=True, text=True, check=True)
    return tuple(sorted({p for p in done.stdout.split("\0") if p and (ROOT / p).is_file()}))


def markdown_files() -> tuple[str, ...]:
    return tracked("*.md")


def blocks(path: str) -> list[Block]:
    """The fenced code blocks of one Markdown file, in order (a fence closes with as many backticks)."""
    found, lines = [], (ROOT / path).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        ticks, language, start = opening.group(1), opening.group(2), i
        i += 1
        while i < len(lines) and lines[i].rstrip() != ticks:
            i += 1
        found.append(Block(path, start + 1, language, "\n".join(lines[start + 1:i]) + "\n"))
        i += 1
    return found


def all_blocks(language: str | None = None) -> list[Block]:
    return [b for p in markdown_files() for b in blocks(p) if language is None or b.language == language]
