# SPDX-License-Identifier: BSD-3-Clause
"""Builds one of CANN's kernel UTs from a fetched ops-nn checkout and runs it on the twin, unchanged.

ops-nn ships a gtest UT per operator (<category>/<op>/tests/ut/op_kernel/test_<op>*.cpp) that CANN
builds against its CPU-debug runtime (tikicpulib) with the operator's kernel source. This command
builds the same sources the way ops-nn's cmake/ut.cmake does for ascend910B1 (the kernel directories
of the operator and of the dependencies its UT CMakeLists names copied into a build directory, the
UT's tiling header force-included, -DKERNELUT=1; bisheng's --cce-auto-sync modelled unless the
CMakeLists.txt of the kernel's directory says AUTO_SYNC false, as ops-nn's add_kernel_sources does)
against the twin's headers, its tikicpulib.h stand-in and its compiled-once part (launch_runtime.cpp),
links the system gtest, and runs every test: each ICPU_RUN_KF runs the kernel on twin cores, and a
broken Ascend C rule fails that test. CANN's advanced API comes from an asc-devkit checkout when
given. Nothing is copied into any repository: the build directory is a temporary one (or --keep).

    python -m ascendc_twin.cann_ut rms_norm_grad --ops-nn $OPS_NN_SRC --asc-devkit $ASC_DEVKIT_SRC
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import resources
from .build import twin_runtime_source
from .errors import EnvironmentSetupError, InvalidInputError

SOC = "ascend910B1"  # the A2 UT target of ops-nn's CMakeLists
CXXFLAGS = ("-std=c++17", "-O1", "-pthread", "-w")
GTEST_LIBS = ("-lgtest_main", "-lgtest")
_SUMMARY_PASSED = re.compile(r"^\[  PASSED  \] (\d+) tests?", re.MULTILINE)
_FAILED_TEST = re.compile(r"^\[  FAILED  \] (\S+\.\S+) \(", re.MULTILINE)
_RAN = re.compile(r"^\[==========\] (\d+) tests? from", re.MULTILINE)


@dataclass
class UtResult:
    op: str
    ran: int
    passed: int
    failed: list[str] = field(default_factory=list)
    returncode: int = 0
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.failed and self.ran > 0


def op_dir(ops_nn: Path, op: str) -> Path:
    found = sorted(p.parent for p in ops_nn.glob(f"*/{op}/op_kernel"))
    if not found:
        raise InvalidInputError(f"op must name an operator of the ops-nn checkout {ops_nn} (no */{op}/op_kernel)")
    return found[0]


def ut_dependencies(ut_dir: Path, op: str) -> tuple[list[str], list[str]]:
    """The compile options and dependency operators AddOpTestCase names for SOC in the UT's CMakeLists."""
    text = (ut_dir / "CMakeLists.txt").read_text()
    for call in re.findall(r"AddOpTestCase\(([^)]*)\)", text):
        args = shlex.split(call)
        if args and args[0] != op and args[0].startswith("ascend"):
            args = [op, *args]
        if len(args) >= 2 and args[1] == SOC:
            options = args[2].split() if len(args) > 2 else []
            return options, [a for a in args[3:] if a not in ("MULTI_KERNEL_TARGET",)]
    raise InvalidInputError(f"the UT of {op} has no AddOpTestCase for {SOC} in {ut_dir / 'CMakeLists.txt'}")


def build(op: str, ops_nn: Path, work: Path, asc_devkit: Optional[Path] = None) -> Path:
    """Compiles the UT of `op` into work/ut; KernelCompile-style failures raise InvalidInputError
    with g++'s message, a missing gtest EnvironmentSetupError."""
    source = op_dir(ops_nn, op)
    ut_dir = source / "tests" / "ut" / "op_kernel"
    if not ut_dir.is_dir():
        raise InvalidInputError(f"op {op} has no kernel UT in the ops-nn checkout ({ut_dir} is missing)")
    options, deps = ut_dependencies(ut_dir, op)
    kernels = work / "ascendc"
    for name in (op, *deps):
        target = kernels / name
        if not target.exists():
            shutil.copytree(op_dir(ops_nn, name) / "op_kernel", target)
    common = ops_nn / "common" / "inc" / "op_kernel"
    if common.is_dir() and not (kernels / "inc").exists():
        shutil.copytree(common, kernels / "inc")
    kernel_cmake = source / "op_kernel" / "CMakeLists.txt"
    auto_sync = not (kernel_cmake.is_file() and re.search(r"AUTO_SYNC\s+false", kernel_cmake.read_text(), re.I))
    tests = sorted(ut_dir.glob(f"test_{op}*.cpp")) + sorted((ut_dir / "arch22").glob(f"test_{op}*.cpp"))
    tiling = ut_dir / f"{op}_tiling_def.h"
    includes = [str(resources.path("include"))]
    if asc_devkit is not None:
        includes.append(str(asc_devkit))
    includes += [str(kernels / op), str(kernels), str(ut_dir), str(ops_nn / "tests" / "ut" / "op_kernel"),
                 str(ops_nn / "tests" / "ut" / "common")]
    cmd = ["g++", *CXXFLAGS, *(f"-I{d}" for d in includes),
           *(["-include", str(tiling)] if tiling.is_file() else []),
           "-DKERNELUT=1", '-DUT_SOC_VERSION="Ascend910B1"', f"-DTWIN_ICPU_AUTO_SYNC={int(auto_sync)}", *options,
           *(str(t) for t in tests), str(kernels / op / f"{op}.cpp"), str(twin_runtime_source()),
           *GTEST_LIBS, "-o", str(work / "ut")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    if done.returncode != 0:
        if "gtest/gtest.h: No such file" in done.stderr or "cannot find -lgtest" in done.stderr:
            raise EnvironmentSetupError("the system gtest is missing: install it (apt-get install libgtest-dev)")
        raise InvalidInputError(f"the UT of {op} does not build on the twin:\n{done.stderr[-6000:]}")
    return work / "ut"


def run(op: str, ops_nn: Path, *, asc_devkit: Optional[Path] = None, gtest_filter: str = "*",
        keep: Optional[Path] = None, timeout: float = 1800) -> UtResult:
    """Builds and runs the UT of `op`: its tests' counts and the names of the failed ones."""
    ops_nn = Path(ops_nn)
    if not ops_nn.is_dir():
        raise InvalidInputError(f"ops_nn must be an ops-nn checkout directory (got {ops_nn})")
    if asc_devkit is not None and not (Path(asc_devkit) / "include" / "adv_api").is_dir():
        raise InvalidInputError(f"asc_devkit must be an asc-devkit checkout (no include/adv_api under {asc_devkit})")
    with tempfile.TemporaryDirectory(prefix=f"cann-ut-{op}-") as scratch:
        work = Path(keep) if keep is not None else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        binary = build(op, ops_nn, work, Path(asc_devkit) if asc_devkit is not None else None)
        done = subprocess.run([str(binary), f"--gtest_filter={gtest_filter}"], capture_output=True, text=True,
                              cwd=work, timeout=timeout)
    output = done.stdout + done.stderr
    ran = sum(int(n) for n in _RAN.findall(output)[-1:])
    passed = sum(int(n) for n in _SUMMARY_PASSED.findall(output))
    return UtResult(op, ran, passed, sorted(set(_FAILED_TEST.findall(output))), done.returncode, output)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ascendc_twin.cann_ut", description=__doc__.split("\n\n")[0])
    parser.add_argument("op", help="the operator's directory name in ops-nn, e.g. rms_norm_grad")
    parser.add_argument("--ops-nn", default=os.environ.get("OPS_NN_SRC"),
                        help="the ops-nn checkout (default: $OPS_NN_SRC)")
    parser.add_argument("--asc-devkit", default=os.environ.get("ASC_DEVKIT_SRC"),
                        help="the asc-devkit checkout for CANN's advanced API (default: $ASC_DEVKIT_SRC)")
    parser.add_argument("--gtest-filter", default="*", help="which tests to run (gtest's filter syntax)")
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if not args.ops_nn:
        parser.error("--ops-nn is needed (or set OPS_NN_SRC to an ops-nn checkout)")
    print(f"building the {args.op} UT against the twin...", file=sys.stderr)
    try:
        result = run(args.op, Path(args.ops_nn), asc_devkit=Path(args.asc_devkit) if args.asc_devkit else None,
                     gtest_filter=args.gtest_filter, keep=args.keep)
    except (InvalidInputError, EnvironmentSetupError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"op": result.op, "ran": result.ran, "passed": result.passed, "failed": result.failed,
                          "returncode": result.returncode}))
    else:
        print(result.output)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
