# SPDX-License-Identifier: BSD-3-Clause
"""What the docs name in inline code exists: every path of this repository (a `dir/file` whose first
part is a top-level entry of the checkout, or of twin/ in the twin's docs, or relative to the doc) is
a file or directory (a path in a paragraph about another project's tree, ops-nn's or asc-devkit's,
may be theirs), and every C++ or Python symbol the operator's docs name (`ComputeTiling`,
`kModelFields`, `RmsNormBackwardTilingData`) is defined or used in the sources."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from markdown_files import ROOT, markdown_files, tracked
from test_links import INLINE_CODE, prose_lines

PATH = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*/?$")
# A symbol: a C++ constant (kName) or a CamelCase name with two humps or more, maybe called or templated.
SYMBOL = re.compile(r"^(k[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)(?:\(\)|<[\w, ]*>)?$")
SOURCES = ("*.h", "*.cpp", "*.py", "*.toml", "*.j2", "*.cmake", "CMakeLists.txt", "*.sh", "*.json")
# Docs that describe other projects' APIs (CANN's headers and samples) beside ours: paths only.
# Projects whose trees share our top-level names (CANN's msopgen layout): a paragraph naming one may
# cite its paths.
FOREIGN_TREES = ("ops-nn", "asc-devkit", "asc-tools", "metadef", "opbase", "ascend-transformer-boost")
FOREIGN_SYMBOLS = ("docs/conformance.md", "twin/RULES.md", "PERFORMANCE.md")


def inline_code(path: str) -> list[tuple[int, str]]:
    out = []
    text = (ROOT / path).read_text(encoding="utf-8").splitlines()
    for number, _ in prose_lines(path):
        for m in INLINE_CODE.finditer(text[number - 1]):
            out.append((number, m.group(0).strip("`").strip()))
    return out


@lru_cache(maxsize=None)
def top_level(directory: str) -> frozenset[str]:
    prefix = f"{directory}/" if directory else ""
    return frozenset(p[len(prefix):].split("/")[0] for p in tracked() if p.startswith(prefix))


def paragraph_of(path: str, number: int) -> str:
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    start = end = number - 1
    while start > 0 and lines[start - 1].strip():
        start -= 1
    while end + 1 < len(lines) and lines[end + 1].strip():
        end += 1
    return "\n".join(lines[start:end + 1])


def missing_paths(path: str) -> list[str]:
    doc_dir = (ROOT / path).parent
    roots = [ROOT] + ([ROOT / "twin"] if path.startswith("twin/") else [])
    problems = []
    for number, code in inline_code(path):
        if "/" not in code or not PATH.match(code):
            continue
        first = code.split("/")[0]
        ours = any(first in top_level(str(r.relative_to(ROOT)) if r != ROOT else "") for r in roots)
        candidates = [r / code for r in roots] + [doc_dir / code]
        if ((ours or (doc_dir / first).exists()) and not any(c.exists() for c in candidates)
                and not any(tree in paragraph_of(path, number) for tree in FOREIGN_TREES)):
            problems.append(f"{path}:{number}: `{code}` does not exist")
    return problems


@lru_cache(maxsize=None)
def source_words() -> frozenset[str]:
    words = set()
    for p in tracked(*SOURCES):
        words |= set(re.findall(r"\b[A-Za-z_]\w*\b", (ROOT / p).read_text(errors="replace")))
    return frozenset(words)


def missing_symbols(path: str) -> list[str]:
    return [f"{path}:{number}: `{code}` is named nowhere in the sources" for number, code in inline_code(path)
            if (m := SYMBOL.match(code)) and m.group(1) not in source_words()]


pytestmark = pytest.mark.skipif(ROOT is None or not markdown_files(), reason="reads the checkout's Markdown files")


@pytest.mark.parametrize("path", markdown_files())
def test_every_inline_path_exists(path):
    problems = missing_paths(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", [p for p in markdown_files() if p not in FOREIGN_SYMBOLS])
def test_every_inline_symbol_exists(path):
    problems = missing_symbols(path)
    assert not problems, "\n".join(problems)


def test_the_checks_find_a_stale_path_and_a_stale_symbol(tmp_path, monkeypatch):
    import test_inline_names as module

    stale = ["NoSuch" + "TilingFunc", "kNoSuch" + "Constant"]  # spelled apart: this file is a source too
    monkeypatch.setattr(module, "inline_code", lambda path: [(3, "op_host/tiling/no_such_tiler.cpp"),
                                                            (4, "twin/platform.h"), (5, stale[0]), (6, stale[1]),
                                                            (7, "op_host/tiling/"), (8, "ComputeTiling")])
    assert len(module.missing_paths("docs/design.md")) == 2
    assert [p.split("`")[1] for p in module.missing_symbols("docs/design.md")] == stale
    assert Path(ROOT / "op_host/tiling").is_dir()
