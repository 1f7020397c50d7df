"""The twin knows nothing of any operator built on it: no file of its source directory imports,
includes or builds from an operator's code (the rmsnorm_backward package, op_host/, op_kernel/)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

TWIN = Path(__file__).resolve().parents[1]  # the twin's source directory: these tests live in it
SKIPPED_DIRS = {"build", "__pycache__", ".pytest_cache", ".hypothesis"}
# What reaching into an operator looks like, by kind of file.
PYTHON = re.compile(r"^\s*(?:from|import)\s+rmsnorm_backward\b|import_module\(\s*[\"']rmsnorm_backward", re.M)
CXX = re.compile(r"^\s*#\s*include\s*[<\"][^>\"]*(?:op_host|op_kernel|rms_norm_backward)|"
                 r"import\(\s*\"rmsnorm_backward", re.M)
BUILD = re.compile(r"op_host|op_kernel|rmsnorm_backward|rms_norm_backward|\.\./")
PATTERNS = {".py": PYTHON, ".cpp": CXX, ".h": CXX, ".txt": BUILD, ".cmake": BUILD, ".toml": BUILD}


def operator_references(name: str, text: str) -> list[str]:
    """The lines of a file called `name` that reach an operator's code."""
    pattern = PATTERNS.get(Path(name).suffix)
    return [] if pattern is None else [m.group(0).strip() for m in pattern.finditer(text)]


def twin_files() -> list[Path]:
    """Every file of the twin but this one, whose examples below are references on purpose."""
    return sorted(p for p in TWIN.rglob("*") if p.is_file() and p != Path(__file__).resolve()
                  and not SKIPPED_DIRS & set(p.relative_to(TWIN).parts))


def test_no_file_of_the_twin_reaches_an_operator():
    files = twin_files()
    assert any(p.name == "loader.cpp" for p in files) and any(p.name == "build.py" for p in files)
    found = {str(p.relative_to(TWIN)): refs for p in files
             if (refs := operator_references(p.name, p.read_text(errors="replace")))}
    assert found == {}


@pytest.mark.parametrize("name, text", [
    ("a.py", "import rmsnorm_backward.errors\n"),
    ("a.py", "    from rmsnorm_backward import resources\n"),
    ("a.py", 'm = importlib.import_module("rmsnorm_backward._tiling")\n'),
    ("a.h", '#include "rms_norm_backward_tiling_data.h"\n'),
    ("a.cpp", "#include <op_host/tiling/platform_facts.h>\n"),
    ("a.cpp", 'py::module_::import("rmsnorm_backward.errors")\n'),
    ("CMakeLists.txt", "file(GLOB s ${CMAKE_CURRENT_SOURCE_DIR}/../op_host/tiling/*.cpp)\n"),
])
def test_the_scan_finds_each_kind_of_reference(name, text):
    assert operator_references(name, text)
