# SPDX-License-Identifier: BSD-3-Clause
"""Building framework/atb_plugin and examples/atb against the public ATB headers of ATB_SRC (a checkout
of github:hicann/ascend-transformer-boost), AscendCL/aclnn from tests/tooling/stub_cann and libatb from
atb_stub.cpp. Without ATB_SRC the tests that need it are skipped with the reason."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import resources

ROOT = resources.checkout()
HERE = Path(__file__).resolve().parent
STUB = ROOT / "tests" / "tooling" / "stub_cann"
PLUGIN = ROOT / "framework" / "atb_plugin"
PLAIN_TILING = sorted((ROOT / "op_host" / "tiling").glob("*.cpp"))  # the plain tiling, every file
PLUGIN_SOURCES = [PLUGIN / "rms_norm_backward_operation.cpp", PLUGIN / "operation_rules.cpp", PLUGIN / "acl_names.cpp",
                  *PLAIN_TILING]
STAND_INS = [STUB / "acl_stub.cpp", HERE / "atb_stub.cpp"]


def atb_include() -> Path:
    """ATB_SRC/include, or a skip saying what is missing."""
    src = os.environ.get("ATB_SRC")
    if not src:
        pytest.skip("ATB_SRC is not set: point it at a checkout of github:hicann/ascend-transformer-boost")
    include = Path(src) / "include"
    if not (include / "atb" / "operation_infra.h").is_file():
        pytest.skip(f"ATB_SRC={src} has no include/atb/operation_infra.h")
    return include


def flags(include: Path) -> list[str]:
    return ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(include), "-I", str(STUB),
            "-I", str(ROOT / "op_host" / "op_api"), "-I", str(PLUGIN), "-I", str(ROOT / "tests" / "atb_plugin")]


def build(include: Path, exe: Path, main: Path) -> Path:
    """Links `main` with the plugin and the stand-ins; a compile error fails the test with g++'s text."""
    proc = subprocess.run(flags(include) + [str(p) for p in PLUGIN_SOURCES + STAND_INS + [main]] + ["-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


def error_codes(include: Path) -> dict[str, int]:
    """atb::ErrorType's enumerators and values, read from the public atb/types.h."""
    text = (include / "atb" / "types.h").read_text(encoding="utf-8")
    body = re.search(r"enum ErrorType\s*:\s*int\s*\{(.*?)\};", text, re.S).group(1)
    codes, value = {}, -1
    for name, explicit in re.findall(r"^\s*(\w+)\s*(?:=\s*(\d+))?\s*,?", re.sub(r"//[^\n]*", "", body), re.M):
        value = int(explicit) if explicit else value + 1
        codes[name] = value
    return codes
