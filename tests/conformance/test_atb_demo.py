# SPDX-License-Identifier: BSD-3-Clause
"""examples/atb, ATB's RmsNormBackwardOperation demo on this operation, built with the public ATB headers (ATB_SRC) and
run on the stand-ins: its order of creation, Setup, launch, synchronisation and release; that every
status is checked; and its check of dx and dgamma, with the closed-form values it prints derived here
from the float64 golden on the demo's inputs. The stand-in aclnn computes nothing; given the golden's
outputs (STUB_OUTPUTS) the demo must pass, given one element off it must fail."""
import os
import re
import subprocess

import numpy as np
import pytest

from rmsnorm_backward.golden import golden

from atb_build import ROOT, atb_include, build

SHAPES = {"dy": (32, 64, 128), "x": (32, 64, 128), "rstd": (32, 64, 1), "gamma": (128,)}
VALUE = 2.0  # every input element of ATB's demo
SUMMARY = re.compile(r"dx\[0\] = (\S+) \(closed form (\S+)\), dgamma\[0\] = (\S+) \(closed form (\S+)\), (\d+) mismatches")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build(atb_include(), tmp_path_factory.mktemp("atb_demo") / "demo", ROOT / "examples" / "atb" / "main.cpp")


def run_demo(exe, fail=None, outputs=None):
    env = {k: v for k, v in os.environ.items() if k not in ("STUB_FAIL", "STUB_OUTPUTS")}
    env.update({"STUB_FAIL": fail} if fail else {})
    env.update({"STUB_OUTPUTS": str(outputs)} if outputs else {})
    return subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=60)


def golden_outputs():
    inputs = {n: np.full(s, VALUE, np.float32) for n, s in SHAPES.items()}
    dx, dgamma = golden(inputs["dy"], inputs["x"], inputs["rstd"], inputs["gamma"])
    return dx, dgamma


def write_outputs(d, dx, dgamma):
    d.mkdir(exist_ok=True)
    dx.astype(np.float32).tofile(d / "dx.bin")
    dgamma.astype(np.float32).tofile(d / "dgamma.bin")
    return d


def test_demo_creates_sets_up_launches_syncs_and_releases_in_order(demo):
    proc = run_demo(demo)
    calls = [line.split(" ")[0] for line in proc.stdout.splitlines() if not line.startswith("dx[0]")]
    assert "ERROR" not in calls, proc.stdout  # a stand-in found a release out of order or a leak
    assert calls[:4] == ["aclInit", "aclrtSetDevice", "CreateContext", "aclrtCreateStream"]
    assert calls[-5:] == ["DestroyOperation", "aclrtDestroyStream", "DestroyContext", "aclrtResetDevice", "aclFinalize"]
    ws, launch, sync = (calls.index(c) for c in ("aclnnRmsNormBackwardGetWorkspaceSize", "aclnnRmsNormBackward",
                                                  "aclrtSynchronizeStream"))
    created = [i for i, c in enumerate(calls) if c == "aclCreateTensor"]
    destroyed = [i for i, c in enumerate(calls) if c == "aclDestroyTensor"]
    assert len(created) == len(destroyed) == 6 and max(created) < ws < launch < min(destroyed) < sync
    assert calls[ws + 1] == "aclrtMalloc"  # the workspace Setup asked for
    reads = [i for i, c in enumerate(calls) if c == "aclrtMemcpy"][-2:]
    frees = [i for i, c in enumerate(calls) if c == "aclrtFree"]
    assert sync < min(reads) and max(reads) < min(frees) and len(frees) == calls.count("aclrtMalloc") == 7
    # Nothing computed the outputs, so the demo's own check must fail on every element.
    assert proc.returncode == 1
    assert SUMMARY.search(proc.stdout).group(5) == str(32 * 64 * 128 + 128)


def test_demo_closed_form_is_the_golden_and_its_check_passes_on_golden_outputs(demo, tmp_path):
    dx, dgamma = golden_outputs()
    proc = run_demo(demo, outputs=write_outputs(tmp_path / "golden", dx, dgamma))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got_dx, want_dx, got_dgamma, want_dgamma, bad = SUMMARY.search(proc.stdout).groups()
    assert float(want_dx) == pytest.approx(dx.flat[0], rel=1e-6) and np.ptp(dx) == 0
    assert float(want_dgamma) == pytest.approx(dgamma[0], rel=1e-6) and np.ptp(dgamma) == 0
    assert (float(got_dx), float(got_dgamma), bad) == (pytest.approx(dx.flat[0]), pytest.approx(dgamma[0]), "0")
    assert proc.stdout.splitlines()[-1] == "RmsNormBackward ATB demo success!"


@pytest.mark.parametrize("tensor", ["dx", "dgamma"])
def test_demo_check_fails_on_one_wrong_element(demo, tmp_path, rng, tensor):
    dx, dgamma = golden_outputs()
    wrong = dx if tensor == "dx" else dgamma
    index = tuple(int(rng.integers(0, n)) for n in wrong.shape)
    wrong[index] *= 1.0 + 1e-3  # beyond the fp32 standard (1e-4 absolute and relative)
    proc = run_demo(demo, outputs=write_outputs(tmp_path / "off", dx, dgamma))
    assert proc.returncode == 1
    assert SUMMARY.search(proc.stdout).group(5) == "1"
    assert "success" not in proc.stdout


@pytest.mark.parametrize("call, expression", [
    ("aclInit", "aclInit("), ("aclrtSetDevice", "aclrtSetDevice("), ("aclrtCreateStream", "aclrtCreateStream("),
    ("aclrtMalloc", "aclrtMalloc("), ("aclrtMemcpy", "aclrtMemcpy("),
    ("aclnnRmsNormBackwardGetWorkspaceSize", "op->Setup("), ("aclnnRmsNormBackward", "op->Execute("),
    ("aclrtSynchronizeStream", "aclrtSynchronizeStream("), ("aclrtFree", "aclrtFree("),
    ("aclrtDestroyStream", "aclrtDestroyStream("), ("aclrtResetDevice", "aclrtResetDevice("),
    ("aclFinalize", "aclFinalize("),
])
def test_demo_checks_every_status(demo, call, expression):
    proc = run_demo(demo, fail=call)
    assert proc.returncode == 1
    failed = [line for line in proc.stderr.splitlines() if " failed with status " in line and "main.cpp" in line]
    assert failed and expression in failed[0], proc.stderr  # the first line names the call; helpers add their own
    lines = proc.stdout.splitlines()
    last = max(i for i, line in enumerate(lines) if line.split(" ")[0] == call)
    # It stopped right there; only the operation released the aclTensors of its failed stage.
    assert all(line.startswith("aclDestroyTensor") for line in lines[last + 1:]), proc.stdout
