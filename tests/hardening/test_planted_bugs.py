# SPDX-License-Identifier: BSD-3-Clause
"""Planted bugs: deliberately broken copies of the kernel (op_kernel/ patched by exact text
replacements in a cache directory, never in the tree) must each be caught, by a twin rule, by the
check that inputs come back unchanged (conftest), by the golden, by an exact answer (0 ulp, inputs
from tests/exact_answers.py) or by the tail lanes of random inputs (no failed element in the last 128
lanes of a row); a bug may run on fewer cores than its case has row groups. Every replacement must match
exactly once, so a kernel refactor turns a stale planted bug into a loud failure, never a silent
no-op; then update its text here.

Each variant compiles only the tiling key its case runs (TILING_KEY_IS is narrowed in the patched
entry), all variants once per session, two at a time, into the kernel cache (by content: a second
run with the same kernel and twin compiles nothing), at -O0: each runs one small case once, and the
twin's results do not depend on the optimisation level (run_kernel's optimize)."""
from __future__ import annotations

import functools
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import rmsnorm_backward.simulate as simulate_module
from rmsnorm_backward.twin import compile_kernel, run_kernel
from rmsnorm_backward.errors import KernelCompileError, KernelRuleError
from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare

from exact_answers import assert_exact, exact_dres, exact_inputs, tail_failures
from kernel_variants import ENTRY, KERNEL_DIR, kernel_copy
from launch_checks import InputChanged
from random_inputs import case_inputs

GOLDEN = "the golden"
INPUT = "an input check"
EXACT = "an exact answer"
TAIL = "the tail lanes"

ROWS_IN_UB = "rms_norm_backward_rows_in_ub.h"
SMALL_COLS = "rms_norm_backward_small_cols.h"
COMMON = "rms_norm_backward_common.h"
STREAMED = "rms_norm_backward_long_rows_streamed.h"
LONG_ROWS = "rms_norm_backward_long_rows.h"
CHUNK_MATH = "rms_norm_backward_chunk_math.h"
DGAMMA_PARTIAL = "rms_norm_backward_dgamma_partial.h"


class Bug(NamedTuple):
    file: str
    old: str
    new: str
    shape: tuple       # x's shape; gamma is the last dim
    dtype: str
    caught_by: str     # a regex of the KernelRuleError, or GOLDEN, INPUT, EXACT or TAIL
    block_dim: int | None = None  # None: as many cores as the tiling asks for
    dres: bool = False  # the fused form: a residual gradient added to dx


BUGS = {
    "UB buffer one block too small": Bug(
        ROWS_IN_UB, "pipe_->InitBuffer(gBuf_, layout.workF32Bytes);",
        "pipe_->InitBuffer(gBuf_, layout.workF32Bytes - 32);", (8, 1000), "float32",
        r"core \d+: Mul: the dst operand's footprint .* must stay inside its buffer"),
    "DataCopy of an odd length": Bug(
        COMMON, "DataCopyPad(dst, src, DataCopyExtParams(1, count * sizeof(T), 0, 0, 0), "
                "DataCopyPadExtParams<T>(false, 0, 0, T(0)));",
        "DataCopy(dst, src, count);", (8, 1000), "float16", r"core \d+: DataCopy: count \* sizeof\(T\) must be a multiple of 32 bytes"),
    "odd-cols padding not zeroed": Bug(
        SMALL_COLS, "DataCopyPadExtParams<T>(true, 0, pad, T(0))", "DataCopyPadExtParams<T>(false, 0, 0, T(0))",
        (64, 13), "float32", GOLDEN),
    "last tile runs past the rows": Bug(
        COMMON, "return left < tileRows ? uint32_t(left) : tileRows;", "return tileRows;", (40, 1000), "float32",
        r"core \d+: DataCopyPad: "),
    "dgamma accumulator never zeroed (UB nothing wrote)": Bug(
        ROWS_IN_UB, "            Duplicate(dgamma_, 0.0f, workLanes_);\n", "", (8, 1000), "float32",
        r"GM buffer \w+ holds undefined data after the launch"),
    "the core's own barrier instead of SyncAll before the dgamma reduction": Bug(
        ENTRY, "        SyncAll();  // waits for every pipe of every core (the default SyncAllConfig): all partials have landed\n",
        "        PipeBarrier<PIPE_ALL>();\n", (4096, 64), "float32",
        r"reads GM bytes that core \d+ wrote .*with no SyncAll in between"),
    "queue buffer never freed": Bug(
        ROWS_IN_UB, "        outQueDx_.FreeTensor(dxT);\n", "", (8, 1000), "float32", r"core \d+: TQue::AllocTensor: every AllocTensor needs its FreeTensor"),
    "bf16 arithmetic without widening": Bug(
        ROWS_IN_UB, "        Narrow(dx, a, lanes);\n", "        Narrow(dx, a, lanes);\n        Muls(dx, dx, T(2.0f), lanes);\n",
        (8, 1000), "bfloat16",  # a compile error, as with CANN's headers (Muls<bfloat16_t> is a static_assert)
        r"(?s)AscendC::Muls.*static assertion failed: .*bfloat16_t has no vector arithmetic on A2"),
    "dx truncated instead of rounded to nearest even": Bug(
        COMMON, "Cast(dst, src, RoundMode::CAST_RINT, count);", "Cast(dst, src, RoundMode::CAST_TRUNC, count);",
        (8, 1000), "bfloat16", GOLDEN),
    "row mean over the aligned cols": Bug(
        ROWS_IN_UB, "ReduceSum(sum, values, workBuf_.Get<float>(), t_.cols);",
        "ReduceSum(sum, values, workBuf_.Get<float>(), t_.row_stride);", (8, 1001), "float32", GOLDEN),
    "vector unit reads gamma without waiting for its copy-in": Bug(
        ROWS_IN_UB, "            CopyInPad(gammaT, gm_.gamma, t_.cols);\n            WaitFor<HardEvent::MTE2_V>(pipe_);\n",
        "            CopyInPad(gammaT, gm_.gamma, t_.cols);\n", (8, 1000), "float16", r"core \d+: Cast: "),
    "dx tile never enqueued": Bug(
        ROWS_IN_UB, "        outQueDx_.EnQue(dxT);\n", "", (8, 1000), "float32", r"core \d+: TQue::DeQue: the queue is empty"),
    "dx written over x": Bug(
        ROWS_IN_UB, "CopyOutRows(gm_.dx[row * t_.cols], dxT, n, t_.cols);",
        "CopyOutRows(gm_.x[row * t_.cols], dxT, n, t_.cols);", (8, 1000), "float32", INPUT),
    "scalar unit reads rstd before its copy-in landed": Bug(
        ROWS_IN_UB, "                WaitFor<HardEvent::MTE2_S>(pipe_);  // this tile's rstd is read by the scalar unit\n",
        "", (8, 1000), "float32", r"core \d+: LocalTensor::GetValue: data written by one pipe and then read .*MTE2_S"),
    "scalar unit reads the row sum before the vector unit wrote it": Bug(
        ROWS_IN_UB, "        WaitFor<HardEvent::V_S>(pipe_);\n        const float total = sum.GetValue(0);",
        "        const float total = sum.GetValue(0);", (8, 1000), "float32",
        r"core \d+: LocalTensor::GetValue: data written by one pipe and then read .*V_S"),
    "one core reads its dgamma partials back before their writes landed": Bug(
        ENTRY, "        SyncAll();  // waits for every pipe of every core (the default SyncAllConfig): all partials have landed\n",
        "", (300, 1000), "float32", r"core 0: DataCopyPad: GM bytes written by one pipe of a core and then read by "
        r"another need SetFlag/WaitFlag<HardEvent::MTE3_MTE2> .*of 'workspace'", block_dim=1),
    "dx rounded half away from zero instead of to nearest even": Bug(
        COMMON, "Cast(dst, src, RoundMode::CAST_RINT, count);", "Cast(dst, src, RoundMode::CAST_ROUND, count);",
        (8, 1000), "float16", EXACT),
    "streamed tail repeat count rounded down": Bug(
        STREAMED, "uint64_t(kFloatsPerRepeat), CeilDiv(count, kFloatsPerRepeat),",
        "uint64_t(kFloatsPerRepeat), count / kFloatsPerRepeat,", (3, 17409), "float32", TAIL),
    "dgamma zeroed once per core instead of once per row group": Bug(
        ROWS_IN_UB, "            if (hasGamma_) {\n                Duplicate(dgamma_, 0.0f, workLanes_);",
        "            if (hasGamma_ && groupIdx == FirstGroup()) {\n                Duplicate(dgamma_, 0.0f, workLanes_);",
        (300, 1000), "float32", GOLDEN, block_dim=2),
    "pass 2 scales by the other row's rstd": Bug(
        STREAMED, "        const float rstd = rstd_[row % kRowsInFlight];\n        LocalTensor<T> slot = inQueSlot_.DeQue<T>();\n"
        "        const uint32_t n = Count(chunk);\n        const LocalTensor<float> g =",
        "        const float rstd = rstd_[(row + 1) % kRowsInFlight];\n        LocalTensor<T> slot = inQueSlot_.DeQue<T>();\n"
        "        const uint32_t n = Count(chunk);\n        const LocalTensor<float> g =",
        (3, 17409), "float32", GOLDEN),
    "long-rows GM dgamma partial written on the tensor's first row, not each row group's": Bug(
        LONG_ROWS, "ComputeRow<store>(row, row == group.begin, row + 1 == group.end);",
        "ComputeRow<store>(row, row == 0, row + 1 == group.end);", (96, 12289), "float32", GOLDEN),
    "atomic add left on after a GM dgamma partial's chunk (dx then adds into GM)": Bug(
        DGAMMA_PARTIAL, "        if (add) {\n            SetAtomicNone();\n        }\n", "", (96, 12289), "float32", GOLDEN),
    "streamed GM dgamma partial written on the tensor's first row, not each row group's": Bug(
        STREAMED, "chunk * C_, n, row == group.begin);", "chunk * C_, n, row == 0);", (83, 43512), "float32", GOLDEN),
    "bf16 GM dgamma partial overwritten by every row of its group": Bug(
        LONG_ROWS, "partial_.Accumulate(partialGm_, dyX, rstd, c.begin, c.count, firstRow);",
        "partial_.Accumulate(partialGm_, dyX, rstd, c.begin, c.count, true);", (96, 12288), "bfloat16", GOLDEN),
    "fp16 dy*x summed onto a scratch chunk nothing zeroed": Bug(
        CHUNK_MATH, "    Duplicate(dst, 0.0f, count);\n    MulAddDst(dst, a, b, count);",
        "    MulAddDst(dst, a, b, count);", (3, 12288), "float16",
        r"core \d+: LocalTensor::GetValue: reads UB that nothing wrote"),
    "dres added after a 16-bit dx is rounded": Bug(
        ROWS_IN_UB, "        if (hasDres_) {\n            Widen(b, dres, lanes);\n"
        "            Add(a, a, b, lanes);\n        }\n        Narrow(dx, a, lanes);\n",
        "        Narrow(dx, a, lanes);\n        if (hasDres_) {\n"
        "            Widen(a, dx, lanes);\n            Widen(b, dres, lanes);\n            Add(a, a, b, lanes);\n"
        "            Narrow(dx, a, lanes);\n        }\n",
        (5, 2049), "float16", GOLDEN, dres=True),
    "dres read at row * cols instead of row * row_stride": Bug(
        ROWS_IN_UB, "ComputeRow32(dyT[at], xT[at], dxT[at], hasDres_ ? dresT[at] : dresT, rstd.GetValue(r));",
        "ComputeRow32(dyT[at], xT[at], dxT[at], hasDres_ ? dresT[r * t_.cols] : dresT, rstd.GetValue(r));",
        (5, 1001), "float32",
        r"core \d+: Add: ", dres=True),
}


def case_of(bug: Bug) -> dict:
    return {"lead": bug.shape[:-1], "gamma_shape": bug.shape[-1:], "dtype": bug.dtype, "soc": "Ascend910B2",
            "rstd_keepdims": True, "scale_exp": 0, "seed": 7}


def inputs_of(bug: Bug):
    """dy, x, rstd, gamma, dres (None unless the bug's case has one) of the bug's case: exact answers
    for EXACT and for the cases with dres (as tests/kernel's exact dres cases), else random."""
    if bug.caught_by == EXACT or bug.dres:
        rng = np.random.default_rng(7)
        dy, x, rstd, gamma = exact_inputs(rng, *bug.shape, bug.dtype)
        return dy, x, rstd, gamma, exact_dres(rng, x) if bug.dres else None
    return (*case_inputs(case_of(bug))[:4], None)


def tiling_key(bug: Bug) -> int:
    return simulate_module.tiling_for(*inputs_of(bug))["tiling_key"]


def patched_kernel(name: str, bug: Bug) -> Path:
    """The kernel with `bug` planted, compiled for its case's tiling key only, in the cache."""
    files = {p.name: p.read_text() for p in KERNEL_DIR.iterdir() if p.is_file()}
    text = files[bug.file]
    assert text.count(bug.old) == 1, f"planted bug {name!r}: its text must occur once in op_kernel/{bug.file}"
    files[bug.file] = text.replace(bug.old, bug.new)
    anchor = "using namespace rmsnorm_backward::kernel;\n"
    assert files[ENTRY].count(anchor) == 1, f"op_kernel/{ENTRY} must contain {anchor!r} once"
    only = (f"#undef TILING_KEY_IS\n#define TILING_KEY_IS(key) (static_cast<uint64_t>(key) == {tiling_key(bug)}u && "
            "::twin::Launch().tiling_key == static_cast<uint64_t>(key))\n")
    files[ENTRY] = files[ENTRY].replace(anchor, anchor + only)
    return kernel_copy("planted", files)


@pytest.fixture(scope="session")
def variants() -> dict:
    """Every planted bug's kernel source and, where the twin refuses to compile it, g++'s message
    (two compiles at a time)."""
    sources = {name: patched_kernel(name, bug) for name, bug in BUGS.items()}

    def build(source: Path):
        try:
            compile_kernel(source, simulate_module.KERNEL_NAME, include_dirs=[source.parent], optimize=False)
        except KernelCompileError as e:
            return str(e)
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(sources, zip(sources.values(), pool.map(build, sources.values()))))


def run_variant(source: Path, bug: Bug, monkeypatch, optimize: bool = False):
    """simulate on the broken kernel (compiled at -O0 unless `optimize`); returns how the bug was
    caught, or None."""
    dy, x, rstd, gamma, dres = inputs_of(bug)
    monkeypatch.setattr(simulate_module, "KERNEL_SOURCE", source)
    monkeypatch.setattr(simulate_module, "run_kernel", functools.partial(run_kernel, optimize=optimize))
    try:
        dx, dgamma, _ = simulate_module.simulate(dy, x, rstd, gamma, dres, block_dim=bug.block_dim)
    except KernelRuleError as e:
        return str(e)
    except InputChanged:
        return INPUT
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma, dres=dres)
    if not (compare(dx, golden_dx, bug.dtype).passed and
            compare(dgamma, golden_dgamma, "float32", round_golden=False).passed):
        return GOLDEN
    if bug.caught_by == EXACT:
        try:
            assert_exact(dx, dgamma, dy, x, rstd, gamma, dres=dres)
        except AssertionError:
            return EXACT
    if bug.caught_by == TAIL and tail_failures(dx, golden_dx, bug.dtype) > 0:
        return TAIL
    return None


@pytest.mark.parametrize("name", BUGS)
def test_planted_bug_is_caught(name, variants, monkeypatch):
    bug = BUGS[name]
    source, compile_error = variants[name]
    caught = compile_error or run_variant(source, bug, monkeypatch)
    assert caught is not None, f"planted bug {name!r} passed unnoticed"
    if bug.caught_by in (GOLDEN, INPUT, EXACT, TAIL):
        assert caught == bug.caught_by
    else:
        assert re.search(bug.caught_by, caught), caught


def test_the_unbroken_kernel_passes_the_same_cases(monkeypatch):
    """The cases themselves are fine: the shipped kernel passes each of them."""
    for bug in BUGS.values():
        assert run_variant(simulate_module.KERNEL_SOURCE, bug, monkeypatch, optimize=True) is None
