# SPDX-License-Identifier: BSD-3-Clause
"""The facts the operator fixes agree with the CPU twin's platform table, checked at compile time
(op_host/tiling/python/platform_agreement.cpp, built into the operator's extension): the file compiles
against the twin's table, and stops the build when the table says otherwise."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ascendc_twin import twin_include_dirs
from rmsnorm_backward import resources

AGREEMENT = "op_host/tiling/python/platform_agreement.cpp"


def syntax_check(twin_include) -> subprocess.CompletedProcess:
    flags = ["-std=c++17", "-fsyntax-only", f"-I{twin_include}", f"-I{resources.path('op_host')}",
             f"-I{resources.path('op_kernel')}"]
    return subprocess.run(["g++", *flags, str(resources.path(AGREEMENT))], capture_output=True, text=True, timeout=120)


@pytest.fixture
def twin_include(tmp_path):
    (include,) = twin_include_dirs()
    copy = tmp_path / "include"
    shutil.copytree(include, copy)
    return copy


def test_the_twin_table_agrees_with_the_operators_facts(twin_include):
    done = syntax_check(twin_include)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("change, message", [
    ((r'\{"Ascend910B2", "ascend910b", 48,', '{"Ascend910B2", "ascend910b", 40,'), "cores"),
    ((r"inline constexpr uint32_t kEventIdsPerEvent = 8;", "inline constexpr uint32_t kEventIdsPerEvent = 16;"),
     "event ids per event"),
    ((r"inline constexpr uint32_t kUbBlockBytes = 32;", "inline constexpr uint32_t kUbBlockBytes = 64;"), "block bytes"),
])
def test_a_table_that_drifts_stops_the_build(twin_include, change, message):
    platform = twin_include / "twin" / "platform.h"
    text, count = re.subn(change[0], change[1], platform.read_text())
    assert count == 1
    platform.write_text(text)
    done = syntax_check(twin_include)
    assert done.returncode != 0 and message in done.stderr
