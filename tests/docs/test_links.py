# SPDX-License-Identifier: BSD-3-Clause
"""Every relative link of every Markdown file resolves: the file or directory exists, and a #anchor
names a heading of the target (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens,
a repeated heading numbered -1, -2, ...). Links inside code are not links."""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import pytest

from markdown_files import FENCE, ROOT, markdown_files

LINK = re.compile(r"(?<!\\)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")


def prose_lines(path: str) -> list[tuple[int, str]]:
    """The lines outside fenced blocks, inline code removed, with their 1-based numbers."""
    out, fence = [], None
    for number, line in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.rstrip() == fence:
            fence = None
        elif fence is None:
            out.append((number, INLINE_CODE.sub("", line)))
    return out


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: str) -> frozenset[str]:
    text = (ROOT / path).read_text(encoding="utf-8")
    seen, found = Counter(), set()
    fence = None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            continue
        if fence is not None:
            fence = None if line.rstrip() == fence else fence
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1).replace("`", ""))
            found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
            seen[base] += 1
    return frozenset(found)


def broken_links(path: str) -> list[str]:
    problems = []
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            resolved = ((ROOT / path).parent / file_part).resolve() if file_part else ROOT / path
            where = f"{path}:{number}: {target}"
            if not resolved.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md":
                if anchor not in anchors(str(resolved.relative_to(ROOT))):
                    problems.append(f"{where} (no heading with that anchor)")
            elif anchor:
                problems.append(f"{where} (an anchor into a file that is not Markdown)")
    return problems


@pytest.mark.parametrize("path", markdown_files())
def test_every_relative_link_resolves(path):
    problems = broken_links(path)
    assert not problems, "\n".join(problems)


def test_the_anchor_rule_is_github_s():
    assert slug("7. Architecture") == "7-architecture"
    assert slug('4. What "correct" means') == "4-what-correct-means"
    assert slug("Synchronisation (sync.h)") == "synchronisation-synch"
    assert slug("Training: Hugging Face models in one call") == "training-hugging-face-models-in-one-call"
