# SPDX-License-Identifier: BSD-3-Clause
"""The twin (twin/, the ascendc-twin distribution) names nothing of the operator built on it: no file
under twin/ mentions the operator's names (from op_def) or a path of this repository outside twin/,
in code, comments or docs. The operator depends on the twin, never the other way round."""
from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import op_def, resources

ROOT = resources.checkout()
pytestmark = pytest.mark.skipif(ROOT is None, reason="reads the source checkout")


@functools.lru_cache(maxsize=None)
def repository_files() -> tuple[str, ...]:
    done = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("needs git to list the checkout's files")
    return tuple(done.stdout.splitlines())


def operator_names() -> set[str]:
    """The operator's own words: its op type, file stem, namespace, macro prefix, package, distribution."""
    op = op_def.load()
    return {op.type, op.file, op.namespace, op.macro_prefix, "rmsnorm-backward", "RmsNorm", "RMSNORM"}


def outside_paths(files) -> set[str]:
    """Paths of the repository outside twin/ that twin/ has no path of its own for: each file and
    each directory (as `dir/`) whose path does not also exist under twin/. A top-level directory
    alone counts only when its name is not a plain word (op_host/ does; examples/ is a word other
    projects' paths use too, as in asc-devkit's examples/)."""
    inside = {f.removeprefix("twin/") for f in files if f.startswith("twin/")}
    inside_dirs = {str(Path(f).parent) + "/" for f in inside} | {"/".join(f.split("/")[:i]) + "/" for f in inside
                                                                 for i in range(1, f.count("/") + 1)}
    found = set()
    for f in files:
        if f.startswith("twin/"):
            continue
        parts = f.split("/")
        found |= {"/".join(parts[:i]) + "/" for i in range(1, len(parts))
                  if i > 1 or not parts[0].isalpha()} - inside_dirs
        if len(parts) > 1 and f not in inside:
            found.add(f)
    return found


TOKEN = re.compile(r"[\w.\-/]+")


@functools.lru_cache(maxsize=None)
def scanner() -> tuple[re.Pattern, frozenset]:
    """The operator's names as one pattern, and the outside paths."""
    names = re.compile("|".join(rf"\b{re.escape(n)}" for n in sorted(operator_names())), re.IGNORECASE)
    return names, frozenset(outside_paths(repository_files()))


def references(text: str) -> list[str]:
    """The operator's names in `text`, and the outside paths it names (a path-like token that is one,
    or starts with one, after any leading ./ or ../)."""
    names, paths = scanner()
    found = {m.group(0) for m in names.finditer(text)}
    for token in TOKEN.findall(text):
        token = re.sub(r"^/*(?:\.{1,2}/)*", "", token).rstrip(".")
        heads = [token[:i + 1] for i, c in enumerate(token) if c == "/"]
        found |= {p for p in (token, *heads) if p in paths}
    return sorted(found)


def test_nothing_under_twin_names_the_operator_or_its_paths():
    files = repository_files()
    twin = [f for f in files if f.startswith("twin/") and (ROOT / f).is_file()]
    assert "twin/include/twin/sync.h" in twin and "twin/README.md" in twin
    found = {f: refs for f in twin if (refs := references((ROOT / f).read_text(errors="replace")))}
    assert found == {}


@pytest.mark.parametrize("text", [
    "// Set by tests/hardening/test_sync_removal.py\n", "see docs/design.md section 3\n",
    "restricted to the pairs an RmsNorm kernel needs\n", "import rmsnorm_backward.errors\n",
    '#include "rms_norm_backward_tiling_data.h"\n', "#include <op_host/tiling/platform_facts.h>\n",
    "file(GLOB s ${CMAKE_CURRENT_SOURCE_DIR}/../op_kernel/*.h)\n", "RMSNORM_CONFORMANCE_TREE=DIR\n",
])
def test_the_scan_finds_each_kind_of_reference(text):
    assert references(text)


@pytest.mark.parametrize("text", ["tests/test_run_kernel.py", "include/twin/platform.h", "demo/scaled_sum.cpp",
                                  "benchmarks/twin_speed.py", "the normalisation kernel", "cmake/pybind11.cmake"])
def test_the_twins_own_paths_are_not_references(text):
    assert references(text) == []
