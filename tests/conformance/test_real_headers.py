# SPDX-License-Identifier: BSD-3-Clause
"""The project's Ascend C sources compile against CANN's own headers in CPU-debug mode: the kernel
(every tiling key), the twin's demo and the twin's test kernels, -fsyntax-only and -c, 0 errors.

Needs ASCEND_HOME_PATH, or ASC_DEVKIT_SRC + ASC_TOOLS_SRC (source checkouts); skipped otherwise.
RMSNORM_CONFORMANCE_TREE=<dir> checks another tree (e.g. a colleague's worktree) instead of this one.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from check import REPO, check
from kernel_units import collect, files_under_tests, macros_left_open, module_kernel_texts
from real_headers import CXX, MODES, Toolchain, intrinsics_standin, locate

TREE = Path(os.environ.get("RMSNORM_CONFORMANCE_TREE") or REPO)
HEADERS = locate()
needs_headers = pytest.mark.skipif(isinstance(HEADERS, str), reason=str(HEADERS))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return check(TREE, tmp_path_factory.mktemp("conformance"), HEADERS)


@needs_headers
@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_source_compiles_against_the_cann_headers(report, mode):
    outcomes = [o for o in report.outcomes if o.mode == mode]
    assert any(o.unit.name == "op_kernel/rms_norm_backward.cpp" for o in outcomes)
    failed = [o for o in outcomes if o.errors]
    assert not failed, f"{len(failed)} of {len(outcomes)} sources fail ({mode}):\n" + report.table(TREE)


def test_the_kernel_entry_dispatches_every_tiling_key_by_its_number():
    """One compile of the entry instantiates every path, as long as each key has its branch. CANN's
    kernel compiler collects the keys from the preprocessed entry and accepts only numbers inside
    TILING_KEY_IS (asc-devkit's kernel_info_infer.py rejects a name or cast there), so each branch
    names its key as a number, and RunPath's static_assert ties it to MakeKey of the path and dtype."""
    tiling = (TREE / "op_kernel" / "rms_norm_backward_tiling_data.h").read_text()
    body = re.search(r"enum class RmsNormBackwardTilingKey[^{]*\{(.*?)\};", tiling, re.S).group(1)
    keys = re.findall(r"\bk\w+\s*=\s*(\d+)", re.sub(r"//[^\n]*", "", body))
    entry = re.sub(r"//[^\n]*", "", (TREE / "op_kernel" / "rms_norm_backward.cpp").read_text())
    arguments = re.findall(r"TILING_KEY_IS\(([^()]*)\)", entry)
    assert all(re.fullmatch(r"\d+", a.strip()) for a in arguments), arguments
    branches = re.findall(r"TILING_KEY_IS\((\d+)\)\)\s*\{\s*RunPath<\w+,\s*\w+,\s*(\d+)>", entry)
    assert len(keys) >= 12 and len(branches) == len(arguments) == len(keys)
    assert sorted(number for number, _ in branches) == sorted(keys)
    assert all(number == checked for number, checked in branches)


def test_every_test_module_with_a_kernel_contributes_its_kernels(tmp_path):
    units, skipped = collect(TREE, tmp_path)
    names = {u.name.split(" ")[0] for u in units} | {name for name, _ in skipped}
    modules = [p for p in files_under_tests(TREE, "*.py")
               if p.parent.name != "conformance" and re.search(r"extern \"C\" __global__", p.read_text())]
    assert modules
    for module in modules:
        texts = module_kernel_texts(module, TREE / "tests")
        assert texts, f"{module}: a kernel entry, but no module-level kernel text the check can find"
        assert all(f"{module.relative_to(TREE)}:{attr}" in names for attr, _ in texts)


@pytest.mark.parametrize("text, expected", [
    ("#if BAD\nx();\n#endif\nAdd(d, a, b, COUNT);", ["BAD", "COUNT"]),
    ("constexpr uint32_t TILE = 4;\nconst int32_t row = 1, BAD = 0;\nDataCopy(t, g, TILE * BAD);", []),
    ("#define WIDE 8\n#ifdef LOUD\n#endif\nGetValue(WIDE);", ["LOUD"]),
    ("GET_TILING_DATA(t, tiling); SetFlag<HardEvent::MTE2_V>(EVENT_ID0);", ["TWIN_TILING_STRUCT"]),
    ("QUALIFIER LocalTensor<float> t = q.AllocTensor<float>();", ["QUALIFIER"]),
])
def test_macros_left_to_the_test_are_found(text, expected):
    assert macros_left_open(text) == expected


def test_the_intrinsics_standin_compiles_on_its_own(tmp_path):
    header = tmp_path / "stub_fun.h"
    header.write_text(intrinsics_standin() + "int main() { return int(vadd(1, 2.0f) + pipe_barrier(PIPE_V)); }\n")
    done = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-x", "c++", str(header)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("env, says", [
    ({}, "set ASCEND_HOME_PATH"),
    ({"ASC_DEVKIT_SRC": "{tmp}", "ASC_TOOLS_SRC": "{tmp}"}, "ASC_DEVKIT_SRC={tmp} is not a source checkout"),
    ({"ASCEND_HOME_PATH": "{tmp}"}, "ASCEND_HOME_PATH={tmp} has no Ascend C include tree"),
])
def test_missing_headers_are_named_in_one_sentence(tmp_path, env, says):
    reason = locate({k: v.format(tmp=tmp_path) for k, v in env.items()})
    assert isinstance(reason, str) and says.format(tmp=tmp_path) in reason


@needs_headers
def test_a_source_checkout_gets_its_missing_pieces_written_into_the_scratch_directory(tmp_path):
    toolchain = Toolchain(HEADERS, tmp_path)
    if HEADERS.devkit is not None:
        assert "struct RmsNormTiling" in (tmp_path / "kernel_tiling" / "kernel_tiling.h").read_text()
        assert (tmp_path / "stub_fun.h").read_text() == intrinsics_standin()
    flags = toolchain.flags()
    assert flags.index(f"-I{tmp_path}") < flags.index(f"-I{HEADERS.include_dirs[0]}")
