# SPDX-License-Identifier: BSD-3-Clause
"""The ATB operation driven through ATB's interface (tests/conformance/atb_driver.cpp) against the
stand-ins of AscendCL/aclnn (tests/tooling/stub_cann) and libatb (atb_stub.cpp), built with the public
ATB headers of ATB_SRC: what the aclnn stages receive (each tensor's dtype, shape, format and memory,
the workspace Setup returned, the operation's execute stream), that Setup's workspace is the tiling's,
and each broken rule's ATB status (values read from atb/types.h) with its one log line. The stand-ins
compute nothing and check that every resource is released once, after its last use."""
import os
import re
import subprocess

import pytest

from rmsnorm_backward import _tiling

from atb_build import HERE, atb_include, build, error_codes

DTYPES = ("float16", "float32", "bfloat16")
LOG = re.compile(r"\[RmsNormBackwardOperation\] (\w+): (.*) \((\w+) (\d+)\)")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    include = atb_include()
    exe = build(include, tmp_path_factory.mktemp("atb_driver") / "atb_driver", HERE / "atb_driver.cpp")

    def run(*args, fail=None):
        env = {**os.environ, "STUB_FAIL": fail} if fail else {k: v for k, v in os.environ.items() if k != "STUB_FAIL"}
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 0 and "ERROR" not in proc.stdout, proc.stdout  # the stand-ins found a misuse
        return proc

    run.codes = error_codes(include)
    return run


def word(name, dtype, shape, fmt=None):
    return f"{name}={dtype}:{','.join(str(d) for d in shape)}" + (f"/{fmt}" if fmt else "")


def described(dtype, shape, fmt):
    return f"{dtype}[{','.join(str(d) for d in shape)}]/{fmt}"


def random_case(rng, dtype, k, flat_rstd):
    lead = tuple(int(d) for d in rng.integers(1, 9, size=int(rng.integers(1, 4))))
    gamma = tuple(int(d) for d in rng.integers(1, 33, size=k))
    x = lead + gamma
    return {"dy": (dtype, x), "x": (dtype, x), "rstd": ("float32", lead if flat_rstd else lead + (1,) * k),
            "gamma": (dtype, gamma), "dx": (dtype, x), "dgamma": ("float32", gamma)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("flat_rstd", [False, True], ids=["rstd keepdims", "rstd flat"])
def test_setup_and_execute_hand_aclnn_the_tensors_the_workspace_and_the_stream(driver, rng, dtype, k, flat_rstd):
    case = random_case(rng, dtype, k, flat_rstd)
    proc = driver(*(word(n, d, s) for n, (d, s) in case.items()))
    out = proc.stdout.splitlines()
    assert proc.stderr == ""
    assert out[out.index("CreateOperation 0 RmsNormBackwardOperation") + 1] == "Counts 4 2"
    x, gamma = case["x"][1], case["gamma"][1]
    assert f"InferShape 0 {described(dtype, x, 'ND')} {described('float32', gamma, 'ND')}" in out

    mallocs = [line.split() for line in out if line.startswith("aclrtMalloc")]
    created = [line.split() for line in out if line.startswith("aclCreateTensor")]
    # One aclTensor per tensor, in VariantPack order, each viewing that tensor's memory (ND = aclFormat 2).
    assert [c[3] for c in created] == [described(d, s, 2) for d, s in case.values()]
    assert [c[2] for c in created] == [m[1] for m in mallocs[:6]]
    tiling = _tiling.compute_tiling(**{f"{n}_shape": list(case[n][1]) for n in ("dy", "x", "rstd", "gamma")},
                                  **{f"{n}_dtype": case[n][0] for n in ("dy", "x", "rstd", "gamma")})
    ws = tiling["workspace_bytes"]
    # aclnn's arguments: the four inputs, a null dres (ATB's VariantPack has none: "-"), the two outputs
    handed = [c[1] for c in created[:4]] + ["-"] + [c[1] for c in created[4:]]
    assert f"aclnnRmsNormBackwardGetWorkspaceSize {' '.join(handed)} workspace {ws}" in out
    setup = out.index(f"Setup 0 {ws}")
    workspace = mallocs[6]
    assert workspace[2] == str(ws) and out.index(" ".join(workspace)) > setup
    stream = next(line.split()[1] for line in out if line.startswith("aclrtCreateStream"))
    launch = out.index(f"aclnnRmsNormBackward {workspace[1]} {ws} {stream}")
    destroyed = [i for i, line in enumerate(out) if line.startswith("aclDestroyTensor")]
    assert {out[i].split()[1] for i in destroyed} == {c[1] for c in created}
    assert launch < min(destroyed) and max(destroyed) < out.index("Execute 0")


def test_execute_launches_on_the_stream_of_the_operations_stream_id(driver):
    proc = driver("dy=float32:4,8", "x=float32:4,8", "rstd=float32:4", "gamma=float32:8", "dx=float32:4,8",
                  "dgamma=float32:8", "--streams=2", "--stream_id=1")
    streams = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("aclrtCreateStream")]
    launch = next(line for line in proc.stdout.splitlines() if line.startswith("aclnnRmsNormBackward "))
    assert len(streams) == 2 and launch.endswith(f" {streams[1]}")


def test_rows_zero_needs_no_memory_for_the_empty_tensors(driver):
    proc = driver("dy=float16:0,8", "x=float16:0,8", "rstd=float32:0,1", "gamma=float16:8", "dx=float16:0,8",
                  "dgamma=float32:8", "--null=dx")
    out = proc.stdout.splitlines()
    assert "InferShape 0 float16[0,8]/ND float32[8]/ND" in out and "Execute 0" in out
    assert any(line.startswith("aclnnRmsNormBackward ") for line in out)


def test_a_larger_workspace_is_accepted_and_aclnn_gets_the_size_it_asked_for(driver):
    proc = driver("dy=bfloat16:2,3,8", "x=bfloat16:2,3,8", "rstd=float32:2,3,1", "gamma=bfloat16:8",
                  "dx=bfloat16:2,3,8", "dgamma=float32:8", "--workspace=long")
    out = proc.stdout.splitlines()
    ws = int(next(line for line in out if line.startswith("Setup 0 ")).split()[2])
    given = next(line.split() for line in out if line.startswith("aclrtMalloc") and line.endswith(f" {ws + 64}"))
    assert any(line.startswith(f"aclnnRmsNormBackward {given[1]} {ws} ") for line in out) and "Execute 0" in out


GOOD = {"dy": "dy=float16:4,8", "x": "x=float16:4,8", "rstd": "rstd=float32:4,1", "gamma": "gamma=float16:8",
        "dx": "dx=float16:4,8", "dgamma": "dgamma=float32:8"}


def args(*changes, drop=(), **tensors):
    return [w for n, w in {**GOOD, **tensors}.items() if n not in drop] + list(changes)


INPUT_STAGES = ("InferShape", "Setup")
CASES = [
    ("rsv byte", args("--rsv=1"), None, ("CreateOperation",), "ERROR_INVALID_PARAM",
     r"param\.rsv must be all zero, its bytes are reserved \(byte 7 is 1\)\."),
    ("dy dtype", args(dy="dy=float32:4,8"), None, INPUT_STAGES, "ERROR_INVALID_TENSOR_DTYPE",
     r"dy must have the dtype of x \(dy float32, x float16\)\."),
    ("int8 tensors", args(dy="dy=int8:4,8", x="x=int8:4,8", gamma="gamma=int8:8"), None, INPUT_STAGES,
     "ERROR_INVALID_TENSOR_DTYPE", r"x must be float16, float32 or bfloat16 \(got int8\)\."),
    ("gamma not trailing", args(gamma="gamma=float16:4"), None, INPUT_STAGES, "ERROR_INVALID_TENSOR_DIM",
     r"gamma must equal the trailing 1 dims of x \(gamma \[4\], x \[4, 8\]\)\."),
    ("rstd of the wrong size", args(rstd="rstd=float32:3"), None, INPUT_STAGES, "ERROR_INVALID_TENSOR_DIM",
     r"rstd must hold one value per row of x, shaped \[4, 1\] or \[4\] \(got \[3\]\)\."),
    ("x NCHW", args(x="x=float16:4,8/NCHW"), None, INPUT_STAGES, "ERROR_INVALID_TENSOR_FORMAT",
     r"x must have format ND \(got NCHW\)\."),
    ("x dimNum 9", args("--dimnum=x:9"), None, INPUT_STAGES, "ERROR_INVALID_TENSOR_DIM_NUM",
     r"x\.shape\.dimNum must be at most atb::MAX_DIM = 8 \(got 9\)\."),
    ("no gamma", args(drop=("gamma",)), None, INPUT_STAGES, "ERROR_INVALID_IN_TENSOR_NUM",
     r"RmsNormBackwardOperation takes 4 \(dy, x, rstd, gamma\) input tensors \(got 3\)\."),
    ("no dgamma", args(drop=("dgamma",)), None, ("Setup",), "ERROR_INVALID_TENSOR_NUM",
     r"RmsNormBackwardOperation takes 2 \(dx, dgamma\) output tensors \(got 1\)\."),
    ("dgamma float16", args(dgamma="dgamma=float16:8"), None, ("Setup",), "ERROR_INVALID_TENSOR_DTYPE",
     r"dgamma must be float32 \(got float16\)\."),
    ("x dataSize", args("--size=x:-4"), None, ("Setup",), "ERROR_INVALID_TENSOR_SIZE",
     r"x\.dataSize must be the 64 bytes of its desc \(got 60\)\."),
    ("dx without memory", args("--null=dx"), None, ("Setup",), "ERROR_INVALID_TENSOR_ADDR",
     r"dx\.deviceData must point at device memory \(got null\)\."),
    ("no context", args("--context=null"), None, ("Setup",), "ERROR_INVALID_CONTEXT_ADDR", r"context must not be null\."),
    ("aclnn first stage fails", args(), "aclnnRmsNormBackwardGetWorkspaceSize", ("Setup",), "ERROR_CANN_ERROR",
     r"aclnnRmsNormBackwardGetWorkspaceSize failed with status 561103\."),
    ("no Setup", args("--setup=skip"), None, ("Execute",), "ERROR_INVALID_PARAM",
     r"Execute must follow a successful Setup, one per Execute\."),
    ("second Execute", args("--setup=twice"), None, ("Execute",), "ERROR_INVALID_PARAM",
     r"Execute must follow a successful Setup, one per Execute\."),
    ("x moved", args("--change=x"), None, ("Execute",), "ERROR_INVALID_PARAM",
     r"x must be the tensor Setup was given \(same desc, deviceData and dataSize\)\."),
    ("workspace short", args("--workspace=short"), None, ("Execute",), "ERROR_INVALID_WORKSPACE_SIZE",
     r"workspaceSize must be at least the \d+ bytes Setup returned \(got \d+\)\."),
    ("workspace null", args("--workspace=null"), None, ("Execute",), "ERROR_INVALID_WORKSPACE_ADDR",
     r"workspace must point at the device memory of \d+ bytes Setup asked for \(got null\)\."),
    ("stream id 1 of 1", args("--stream_id=1"), None, ("Execute",), "ERROR_INVALID_STREAM",
     r"the context must hold an execute stream for stream id 1 \(set it with Context::SetExecuteStream\)\."),
    ("no stream", args("--streams=0"), None, ("Execute",), "ERROR_INVALID_STREAM",
     r"the context must hold an execute stream for stream id 0 \(set it with Context::SetExecuteStream\)\."),
    ("launch fails", args(), "aclnnRmsNormBackward", ("Execute",), "ERROR_CANN_ERROR",
     r"aclnnRmsNormBackward failed with status 561103\."),
]


@pytest.mark.parametrize("argv, fail, stages, status, sentence", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_broken_rule_returns_its_atb_status_with_one_log_line(driver, argv, fail, stages, status, sentence):
    proc = driver(*argv, fail=fail)
    code = driver.codes[status]
    printed = {}
    for line in proc.stdout.splitlines():
        stage, _, rest = line.partition(" ")
        if stage in ("CreateOperation", "InferShape", "Setup", "Execute"):
            printed[stage] = int(rest.split()[0])  # the last one for a stage run twice
    logged = [LOG.fullmatch(line) for line in proc.stderr.splitlines()]
    assert all(logged), proc.stderr
    for stage in stages:
        assert printed[stage] == code, proc.stdout
        assert any(m.group(1) == stage and re.fullmatch(sentence, m.group(2)) and m.group(3) == status and
                   int(m.group(4)) == code for m in logged), proc.stderr
    first = [m.group(1) for m in logged][0]
    assert first == stages[0]  # nothing failed before the stage that broke the rule
