# SPDX-License-Identifier: BSD-3-Clause
"""examples/: the Python demo on the twin, and the aclnn C++ demo compiled against test doubles of
AscendCL (no NPU here) to check its order of creation, launch, synchronisation and release, and that
every status is checked."""
import subprocess
import sys

import pytest

from rmsnorm_backward import resources

ROOT = resources.checkout()
STUB = ROOT / "tests" / "tooling" / "stub_cann"


def test_python_demo_runs_the_operator_text_case_on_the_twin():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "twin_demo.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("all inputs 2.0: dx[0, 0, :4] = [-120. -120. -120. -120.], dgamma[:4] = [16384.")
    assert lines[-1] == "PASS"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    exe = tmp_path_factory.mktemp("demo") / "demo"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(STUB), "-I", str(ROOT / "op_host" / "op_api"),
                    str(ROOT / "examples" / "aclnn" / "main.cpp"), str(STUB / "acl_stub.cpp"),
                    *map(str, sorted((ROOT / "op_host" / "tiling").glob("*.cpp"))), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


def run_demo(exe, fail=None):
    env = {"STUB_FAIL": fail} if fail else {}
    return subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=60)


def test_aclnn_demo_creates_launches_syncs_and_releases_in_order(demo):
    proc = run_demo(demo)
    calls = [line.split(" ")[0] for line in proc.stdout.splitlines() if not line.startswith("dx[0]")]
    assert "ERROR" not in calls, proc.stdout  # the stub found a release out of order or a leak
    assert calls[:3] == ["aclInit", "aclrtSetDevice", "aclrtCreateStream"]
    assert calls[-3:] == ["aclrtDestroyStream", "aclrtResetDevice", "aclFinalize"]
    ws, launch, sync = (calls.index(c) for c in ("aclnnRmsNormBackwardGetWorkspaceSize", "aclnnRmsNormBackward",
                                                  "aclrtSynchronizeStream"))
    created = [i for i, c in enumerate(calls) if c == "aclCreateTensor"]
    assert len(created) == 6 and max(created) < ws < launch < sync
    assert calls[ws + 1] == "aclrtMalloc"  # the workspace, between the two stages
    first_release = min(i for i, c in enumerate(calls) if c in ("aclDestroyTensor", "aclrtFree"))
    reads = [i for i, c in enumerate(calls) if c == "aclrtMemcpy"][-2:]
    assert sync < min(reads) and max(reads) < first_release
    assert calls.count("aclDestroyTensor") == 6 and calls.count("aclrtFree") == calls.count("aclrtMalloc") == 7
    # The stub computes nothing, so the demo's own check of dx = -120 and dgamma = 16384 must fail.
    assert proc.returncode == 1 and "262272 mismatches" in proc.stdout


@pytest.mark.parametrize("call", ["aclInit", "aclrtSetDevice", "aclrtCreateStream", "aclrtMalloc", "aclrtMemcpy",
                                  "aclnnRmsNormBackwardGetWorkspaceSize", "aclnnRmsNormBackward",
                                  "aclrtSynchronizeStream", "aclDestroyTensor", "aclrtFree", "aclrtDestroyStream",
                                  "aclrtResetDevice", "aclFinalize"])
def test_aclnn_demo_checks_every_status(demo, call):
    proc = run_demo(demo, fail=call)
    assert proc.returncode == 1
    assert f"{call}(" in proc.stderr and "failed with status 561103" in proc.stderr
    assert proc.stdout.splitlines()[-1].startswith(call)  # it stopped right there
