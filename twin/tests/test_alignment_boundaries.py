# SPDX-License-Identifier: BSD-3-Clause
"""Every UB alignment rule of the twin at its exact boundary: each operand of each API family placed
16 bytes past a 32-byte boundary is refused naming the call, the operand and the rule, and the same
call 32 bytes along runs (the rule is 32, not 16 and not 64).

Then a small mutation run: four copies of twin/include, each with one rule loosened to 16 bytes (a textual edit
in a temporary directory, never in the tree) must each let one of these cases through, so a twin that
drifts more lenient on a rule fails here."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from ascendc_twin import build, resources
from ascendc_twin.errors import TwinRuleError

from small_kernels import run

N = 256  # floats per operand: 1024 bytes, whole 256-byte repeats for every family

# A kernel `align` whose every case is one call with one operand O bytes (a define) past its buffer's
# 32-byte aligned start (ALIGN_O, a define; ALIGN_N elements a call); `pick` (GM) chooses the case. Every UB buffer is written first, so no case
# reads bytes nothing wrote. F, H and B are O in floats, halves and bytes.
_KERNEL = r"""
extern "C" __global__ __vector__ void align(GM_ADDR a, GM_ADDR pick, GM_ADDR out)
{
    constexpr uint32_t F = ALIGN_O / 4, H = ALIGN_O / 2, B = ALIGN_O;
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd, bw, bm, bh, bo;
    pipe.InitBuffer(ba, (ALIGN_N + 64) * 4);
    pipe.InitBuffer(bb, (ALIGN_N + 64) * 4);
    pipe.InitBuffer(bd, (ALIGN_N + 64) * 4);
    pipe.InitBuffer(bw, (ALIGN_N + 64) * 4);
    pipe.InitBuffer(bm, ALIGN_N * 4);
    pipe.InitBuffer(bh, (ALIGN_N + 64) * 2);
    pipe.InitBuffer(bo, (ALIGN_N + 64) * 4);
    LocalTensor<float> x = ba.Get<float>(), y = bb.Get<float>(), d = bd.Get<float>(), w = bw.Get<float>();
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    LocalTensor<half> h = bh.Get<half>();
    LocalTensor<int32_t> o = bo.Get<int32_t>();
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(a), ALIGN_N + 64);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), ALIGN_N + 64);
    GlobalTensor<int32_t> gp;
    gp.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(pick), 1);
    const int32_t k = gp.GetValue(0);
    Duplicate(x, 1.5f, ALIGN_N + 64);
    Duplicate(y, 0.5f, ALIGN_N + 64);
    Duplicate(d, 0.0f, ALIGN_N + 64);
    Duplicate(w, 0.0f, ALIGN_N + 64);
    Duplicate(m.ReinterpretCast<int32_t>(), int32_t(0x5555), ALIGN_N);
    Duplicate(h, half(0), ALIGN_N + 64);
    Duplicate(o, int32_t(0), ALIGN_N + 64);
    PipeBarrier<PIPE_ALL>();
    switch (k) {
CASES
    }
    PipeBarrier<PIPE_ALL>();
}
"""


class Case(NamedTuple):
    call: str   # the call with `{o}` where the operand under test is offset
    rule: str   # the refusal at 16 bytes, a regex


VECTOR = "the {} operand must start 32-byte aligned in UB"
SPAN = VECTOR
COPY = "the UB {} must start 32-byte aligned"
PAD = "DataCopyExtParams(1, ALIGN_N * 4, 0, 0, 0)"
CASES = {
    "Exp dst": Case("Exp(d{o}, x, ALIGN_N)", "Exp: " + VECTOR.format("dst")),
    "Exp src": Case("Exp(d, x{o}, ALIGN_N)", "Exp: " + VECTOR.format("src")),
    "Add dst": Case("Add(d{o}, x, y, ALIGN_N)", "Add: " + VECTOR.format("dst")),
    "Add src0": Case("Add(d, x{o}, y, ALIGN_N)", "Add: " + VECTOR.format("src0")),
    "Add src1": Case("Add(d, x, y{o}, ALIGN_N)", "Add: " + VECTOR.format("src1")),
    "Muls dst": Case("Muls(d{o}, x, 2.0f, ALIGN_N)", "Muls: " + VECTOR.format("dst")),
    "Muls src": Case("Muls(d, x{o}, 2.0f, ALIGN_N)", "Muls: " + VECTOR.format("src")),
    "Duplicate dst": Case("Duplicate(d{o}, 1.0f, ALIGN_N)", "Duplicate: " + VECTOR.format("dst")),
    "Axpy dst": Case("Axpy(d{o}, x, 2.0f, ALIGN_N)", "Axpy: " + VECTOR.format("dst")),
    "Axpy src": Case("Axpy(d, x{o}, 2.0f, ALIGN_N)", "Axpy: " + VECTOR.format("src")),
    "MulAddDst src1": Case("MulAddDst(d, x, y{o}, ALIGN_N)", "MulAddDst: " + VECTOR.format("src1")),
    "Cast dst": Case("Cast(h{oh}, x, RoundMode::CAST_RINT, ALIGN_N)", "Cast: " + VECTOR.format("dst")),
    "Cast src": Case("Cast(h, x{o}, RoundMode::CAST_RINT, ALIGN_N)", "Cast: " + VECTOR.format("src")),
    "ReduceSum src": Case("ReduceSum(d, x{o}, w, ALIGN_N)", "ReduceSum: " + VECTOR.format("src")),
    "ReduceSum workLocal": Case("ReduceSum(d, x, w{o}, ALIGN_N)", "ReduceSum: workLocal must start 32-byte aligned"),
    "Brcb dst": Case("Brcb(d{o}, x, 1, BrcbRepeatParams(1, 8))", "Brcb: " + VECTOR.format("dst")),
    "Brcb src": Case("Brcb(d, x{o}, 1, BrcbRepeatParams(1, 8))", "Brcb: the src operand must start 32-byte aligned"),
    "Compare dst": Case("Compare(m{ob}, x, y, CMPMODE::LT, ALIGN_N)", "Compare: " + SPAN.format("dst")),
    "Compare src0": Case("Compare(m, x{o}, y, CMPMODE::LT, ALIGN_N)", "Compare: " + SPAN.format("src0")),
    "Compare src1": Case("Compare(m, x, y{o}, CMPMODE::LT, ALIGN_N)", "Compare: " + SPAN.format("src1")),
    "Select dst": Case("Select(d{o}, m, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, ALIGN_N)", "Select: " + SPAN.format("dst")),
    "Select selMask": Case("Select(d, m{ob}, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, ALIGN_N)",
                           "Select: " + SPAN.format("selMask")),
    "Select src0": Case("Select(d, m, x{o}, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, ALIGN_N)", "Select: " + SPAN.format("src0")),
    "Select src1": Case("Select(d, m, x, y{o}, SELMODE::VSEL_TENSOR_TENSOR_MODE, ALIGN_N)", "Select: " + SPAN.format("src1")),
    "DataCopy to UB": Case("DataCopy(x{o}, ga, ALIGN_N)", "DataCopy: " + COPY.format("destination")),
    "DataCopy from UB": Case("DataCopy(go, x{o}, ALIGN_N)", "DataCopy: " + COPY.format("source")),
    "DataCopy UB to UB": Case("DataCopy(d, x{o}, ALIGN_N)", "DataCopy: " + COPY.format("source")),
    "DataCopyPad to UB": Case(f"DataCopyPad(x{{o}}, ga, {PAD}, DataCopyPadExtParams<float>(false, 0, 0, 0.0f))",
                              "DataCopyPad: " + COPY.format("destination")),
    "DataCopyPad from UB": Case(f"DataCopyPad(go, x{{o}}, {PAD})", "DataCopyPad: " + COPY.format("source")),
    "Gather dst": Case("Gather(d{o}, x, o.ReinterpretCast<uint32_t>(), 0u, ALIGN_N)", "Gather: dst must start 32-byte aligned"),
    "Gather src": Case("Gather(d, x{o}, o.ReinterpretCast<uint32_t>(), 0u, ALIGN_N)", "Gather: src must start 32-byte aligned"),
    "Gather offsets": Case("Gather(d, x, o.ReinterpretCast<uint32_t>(){o}, 0u, ALIGN_N)",
                           "Gather: the offset tensor must start 32-byte aligned"),
    "LocalTensor addr": Case("{{ LocalTensor<float> t(TPosition::VECCALC, ALIGN_O, 8); (void)t; }}", "addr must be 32-byte aligned"),
    "TBuf GetWithOffset": Case("(void)bw.GetWithOffset<float>(8, ALIGN_O)", "TBuf::GetWithOffset: the offset must be a multiple of 32 bytes"),
}


def source(cases) -> str:
    calls = (CASES[case].call.format(o="[F]", oh="[H]", ob="[B]") for case in cases)
    return _KERNEL.replace("CASES", "\n".join(f"    case {k}: {call}; break;" for k, call in enumerate(calls)))


ALL_CASES = source(list(CASES))  # the kernel of every case (module level: tests/conformance compiles it)


def launch(offset: int, case: str, only: bool = False):
    """None when the case runs, else the twin's refusal; only: a kernel of this case alone (one
    quicker compile), else of every case."""
    cases = [case] if only else list(CASES)
    args = {"a": np.random.default_rng(5).standard_normal(N + 64).astype(np.float32),
            "pick": np.array([cases.index(case)], np.int32), "out": np.zeros(N + 64, np.float32)}
    try:
        run(source(cases) if only else ALL_CASES, "align", args, defines={"ALIGN_N": N, "ALIGN_O": offset}, allow_undefined=True)
    except TwinRuleError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_16_bytes_off_is_refused_and_32_runs(case):
    refusal = launch(16, case)
    assert refusal is not None, f"{case}: an operand 16 bytes past a 32-byte boundary was accepted"
    assert re.search(CASES[case].rule, refusal), refusal
    assert launch(32, case) is None


class Mutant(NamedTuple):
    file: str
    old: str
    new: str
    case: str  # a case above the loosened rule must now let through


MUTANTS = {
    "vector operands aligned to 16 bytes": Mutant(
        "vector_engine.h", "uint32_t align = kUbBlockBytes;", "uint32_t align = kUbBlockBytes / 2;", "Add src1"),
    "compare and select operands aligned to 16 bytes": Mutant(
        "compare_select.h", "uint64_t bytes, uint32_t align = 32)", "uint64_t bytes, uint32_t align = 16)",
        "Select src0"),
    "DataCopy's UB operand aligned to 16 bytes": Mutant(
        "data_copy.h", "TWIN_CHECK(t.ByteOffset() % kUbBlockBytes == 0, call, \"the UB \", role,",
        "TWIN_CHECK(t.ByteOffset() % 16 == 0, call, \"the UB \", role,", "DataCopyPad to UB"),
    "ReduceSum's workLocal aligned to 16 bytes": Mutant(
        "reduce.h", "TWIN_CHECK(work.ByteOffset() % kUbBlockBytes == 0, call, \"workLocal must start",
        "TWIN_CHECK(work.ByteOffset() % 16 == 0, call, \"workLocal must start", "ReduceSum workLocal"),
}


def mutated_include(tmp: Path, mutant: Mutant) -> Path:
    """A copy of the twin's include directory with the mutant's edit (its text must occur exactly once)."""
    include = tmp / "include"
    shutil.copytree(resources.path("include"), include)
    header = include / "twin" / mutant.file
    text = header.read_text()
    assert text.count(mutant.old) == 1, f"mutant text must occur once in twin/include/twin/{mutant.file}"
    header.write_text(text.replace(mutant.old, mutant.new))
    return include


def test_each_loosened_alignment_rule_lets_a_case_through(tmp_path, monkeypatch):
    # Compiled without the precompiled header: one per mutant would only push the real one out of the cache.
    monkeypatch.setattr(build, "precompiled_header", lambda *_: None)
    for k, (name, mutant) in enumerate(MUTANTS.items()):
        include = mutated_include(tmp_path / str(k), mutant)
        monkeypatch.setattr(build, "twin_include_dirs", lambda: [include])
        assert launch(16, mutant.case, only=True) is None, f"mutant {name!r} was not caught by case {mutant.case!r}"
