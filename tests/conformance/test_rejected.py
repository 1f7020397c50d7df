# SPDX-License-Identifier: BSD-3-Clause
"""What CANN's Ascend C headers reject, the twin's compile rejects too: one case per declaration where
the twin must match the real headers (the declarations compared with asc-devkit's include/basic_api,
the project's sources compiled against both). Each case is a broken snippet, which must fail
to compile against the twin -- and against the real headers in CPU-debug mode when they are
available (ASCEND_HOME_PATH, or ASC_DEVKIT_SRC + ASC_TOOLS_SRC) -- and its fixed form, which must
compile against both (all fixed forms share one translation unit).
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from real_headers import CXX, CompileResult, Toolchain, locate
from ascendc_twin import twin_include_dirs

HEADERS = locate()

PRELUDE = """#include "kernel_operator.h"
using namespace AscendC;
"""
# The tensors and queues a case body may use.
SETUP = """    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> d = buf.Get<float>(), a = d[256], b = d[512];
    LocalTensor<half> h = buf.Get<half>(128);
    LocalTensor<bfloat16_t> bf = buf.Get<bfloat16_t>(128);
"""


@dataclass
class Case:
    broken: str      # a function body (or a declaration at namespace scope when `scope` is "file")
    fixed: str
    twin_says: str   # a fragment of g++'s message against the twin
    scope: str = "body"


CASES = {
    "DataCopyExtParams has no 4-argument constructor": Case(
        "DataCopyExtParams p(1, 32, 0, 0);", "DataCopyExtParams p(1, 32, 0, 0, 0);",
        "no matching function for call to 'AscendC::DataCopyExtParams::DataCopyExtParams(int, int, int, int)'"),
    "a bitwise mask is a non-const array": Case(
        "const uint64_t m[2] = {~0ull, ~0ull}; Add(d, a, b, m, 1, BinaryRepeatParams());",
        "uint64_t m[2] = {~0ull, ~0ull}; Add(d, a, b, m, 1, BinaryRepeatParams());",
        "no matching function for call to 'Add("),
    "a scalar op's bitwise mask is a non-const array": Case(
        "const uint64_t m[2] = {~0ull, 0}; Muls(d, a, 2.0f, m, 1, UnaryRepeatParams());",
        "uint64_t m[2] = {~0ull, 0}; Muls(d, a, 2.0f, m, 1, UnaryRepeatParams());",
        "no matching function for call to 'Muls("),
    "Duplicate's bitwise mask is a non-const array": Case(
        "const uint64_t m[2] = {~0ull, 0}; Duplicate(d, 1.0f, m, 1, 1, 8);",
        "uint64_t m[2] = {~0ull, 0}; Duplicate(d, 1.0f, m, 1, 1, 8);",
        "no matching function for call to 'Duplicate("),
    "binary count forms have no isSetMask": Case(
        "Add<float, false>(d, a, b, 64);", "Add<float>(d, a, b, 64);",
        "no matching function for call to 'Add<float, false>("),
    "unary count forms have no isSetMask": Case(
        "Ln<float, false>(d, a, 64);", "Ln<float>(d, a, 64);", "no matching function for call to 'Ln<float, false>("),
    "Duplicate's count form has no isSetMask": Case(
        "Duplicate<float, false>(d, 1.0f, 64);", "Duplicate<float>(d, 1.0f, 64);",
        "no matching function for call to 'Duplicate<float, false>("),
    "ReduceSum's mask forms have no isSetMask": Case(
        "ReduceSum<float, false>(d, a, b, 64, 1, 8);", "ReduceSum<float>(d, a, b, 64, 1, 8);",
        "no matching function for call to 'ReduceSum<float, false>("),
    "GlobalTensor::SetValue is not const": Case(
        "void Store(const GlobalTensor<float> &g) { g.SetValue(0, 1.0f); }",
        "void Store(GlobalTensor<float> &g) { g.SetValue(0, 1.0f); }",
        "passing 'const AscendC::GlobalTensor<float>' as 'this' argument discards qualifiers", scope="file"),
    "the queue queries are not const": Case(
        "bool Room(const TQue<QuePosition::VECIN, 1> &q) { return q.VacantInQue() && !q.HasTensorInQue(); }",
        "bool Room(TQue<QuePosition::VECIN, 1> &q) { return q.VacantInQue() && !q.HasTensorInQue(); }",
        "discards qualifiers", scope="file"),
    "bfloat16_t has no vector arithmetic on A2 (repeat forms)": Case(
        "Add(bf, bf[16], bf[32], 16, 1, BinaryRepeatParams());", "Add(h, h[16], h[32], 16, 1, BinaryRepeatParams());",
        "A2 supports half, float, int16_t and int32_t for this instruction"),
    "the tensor-scalar ops take no bfloat16_t (every form)": Case(
        "Muls(bf, bf[16], bfloat16_t(2.0f), 16);", "Muls(h, h[16], half(2.0f), 16);",
        "A2 supports half, float, int16_t and int32_t for this instruction"),
    "A2 has no integer Div (repeat forms)": Case(
        "LocalTensor<int32_t> i = buf.Get<int32_t>(); Div(i, i[8], i[16], 8, 1, BinaryRepeatParams());",
        "LocalTensor<int32_t> i = buf.Get<int32_t>(); Max(i, i[8], i[16], 8, 1, BinaryRepeatParams());",
        "A2 supports half and float"),
    "the unary ops take half and float only (repeat forms)": Case(
        "LocalTensor<int16_t> i = buf.Get<int16_t>(); Abs(i, i[16], 16, 1, UnaryRepeatParams());",
        "Abs(h, h[16], 16, 1, UnaryRepeatParams());", "A2 supports half and float"),
    "Duplicate takes no 8-bit type": Case(
        "LocalTensor<int8_t> i = buf.Get<int8_t>(); Duplicate(i, int8_t(1), 32);",
        "LocalTensor<int16_t> i = buf.Get<int16_t>(); Duplicate(i, int16_t(1), 16);", "A2 supports half, bfloat16_t"),
    "A2 has no Cast between half and bfloat16_t": Case(
        "Cast(bf, h, RoundMode::CAST_RINT, 128);", "Cast(d, h, RoundMode::CAST_NONE, 128);",
        "A2 has no conversion between half and bfloat16_t"),
    "a kernel entry may not reuse a C library name": Case(
        'extern "C" __global__ __aicore__ void sync(GM_ADDR x) {}',
        'extern "C" __global__ __aicore__ void sync_cores(GM_ADDR x) {}',
        "conflicting declaration of C function 'void sync(uint8_t*)'", scope="file"),
    "bfloat16_t has += and -= but no *= or /=": Case(
        "void Twice(bfloat16_t &v) { v *= 2.0f; }", "void Twice(bfloat16_t &v) { v = bfloat16_t(float(v) * 2.0f); }",
        "no match for 'operator*='", scope="file"),
    "bfloat16_t has no /= either": Case(
        "void Half(bfloat16_t &v) { v /= 2.0f; }", "void Half(bfloat16_t &v) { v = bfloat16_t(float(v) / 2.0f); }",
        "no match for 'operator/='", scope="file"),
    "half and float do not mix in scalar arithmetic (the real half converts both ways: ambiguous)": Case(
        "float Scale(half v, float s) { return v * s; }", "float Scale(half v, float s) { return float(v) * s; }",
        "ambiguous overload for 'operator*'", scope="file"),
}


def translation_unit(cases: dict, which: str) -> tuple[str, dict[str, range]]:
    """One source holding the `which` form of every case, and the lines each case occupies."""
    lines, where = PRELUDE.splitlines(), {}
    for name, case in cases.items():
        if case.scope == "file":
            where[name] = range(len(lines) + 1, len(lines) + 2)
            lines.append(getattr(case, which))
    lines += ['extern "C" __global__ __aicore__ void cases(GM_ADDR x)', "{", *SETUP.splitlines()]
    for name, case in cases.items():
        if case.scope == "body":
            where[name] = range(len(lines) + 1, len(lines) + 2)
            lines.append(f"    {{ {getattr(case, which)} }}")
    return "\n".join(lines + ["}"]) + "\n", where


def twin_compile(source: Path) -> CompileResult:
    flags = [f"-I{d}" for d in twin_include_dirs()]
    done = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-fmax-errors=0", *flags, str(source)],
                          capture_output=True, text=True)
    return CompileResult(done.returncode, done.stderr)


def rejected(result: CompileResult, own: Path, lines: range, says: str = "") -> bool:
    """Whether an error (or the instantiation that led to one) lies on `lines` of the case source."""
    text = result.stderr.replace("\u2018", "'").replace("\u2019", "'")
    hits = [message for where, message in CompileResult(result.returncode, text).errors([own])
            if int(where.rsplit(":", 1)[1]) in lines]
    return bool(hits) and (not says or any(says in message for message in hits))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Both forms of every case, each compiled once against the twin and once against the real headers."""
    out = {}
    real = None
    if not isinstance(HEADERS, str):
        real = Toolchain(HEADERS, tmp_path_factory.mktemp("real_headers"))
        real.precompile()
    for which in ("broken", "fixed"):
        directory = tmp_path_factory.mktemp(which)
        text, where = translation_unit(CASES, which)
        source = directory / "cases.cpp"
        source.write_text(text)
        out[which] = (directory, where, twin_compile(source), real.compile(source, "syntax") if real else None)
    return out


def test_every_fixed_form_compiles_against_both(compiled):
    _, _, twin, cann = compiled["fixed"]
    assert twin.returncode == 0, twin.stderr[-3000:]
    if cann is not None:
        assert cann.returncode == 0, cann.stderr[-3000:]


@pytest.mark.parametrize("name", list(CASES))
def test_what_the_real_headers_reject_the_twin_rejects(compiled, name):
    directory, where, twin, cann = compiled["broken"]
    assert rejected(twin, directory, where[name], CASES[name].twin_says), twin.stderr[-3000:]
    if cann is not None:
        assert rejected(cann, directory, where[name]), f"the real headers accept the broken form of: {name}"

