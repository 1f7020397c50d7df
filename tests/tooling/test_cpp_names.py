# SPDX-License-Identifier: BSD-3-Clause
"""The C++ names rule, over every tracked C++ source: the operator's own code lives in one root
namespace (op_def's op.namespace) with one sub-namespace per layer, other namespaces only where a
framework or the twin mandates them; the operator's own macros and include guards carry one prefix
(op_def's op.macro_prefix). A violation is reported with its file and line."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import op_def

ROOT = Path(__file__).resolve().parents[2]
OP = op_def.load()

# The layers inside the operator's root namespace: kernel (op_kernel), layout (the UB layout the kernel
# and the tiling share), tiling (op_host/tiling), atb (framework/atb_plugin), npu
# (framework/torch_npu_adapter).
LAYERS = ("kernel", "layout", "tiling", "atb", "npu")
# Namespaces others define, entered only for the glue they require: Ascend C's API, CANN's tiling,
# graph and op registration (optiling, ge, gert, fe, platform_ascendc, ops), ATB's interface, the
# twin (a separate tool with its own namespace) and pybind11 (as an alias target).
FOREIGN = ("AscendC", "optiling", "ge", "gert", "fe", "platform_ascendc", "ops", "atb", "twin", "pybind11")
# The operator's own C++ code, where every macro carries the prefix.
OPERATOR_DIRS = ("op_kernel/", "op_host/", "framework/")
# Macros whose names the operator does not choose: the aclnn header keeps the guard CANN's opbuild
# gives the aclnn header it generates for the custom op package, so including both is harmless.
MANDATED_MACROS = (re.compile(rf"ACLNN_{OP.file.upper()}_H_"),)
# Generated for another operator (the codegen's toy, with its own op_def), not this one's code.
OTHER_OPERATORS = ("tests/tooling/snapshots/",)

NAMESPACE = re.compile(r"\bnamespace\b\s*(?P<name>[\w:]*)\s*(?:(?P<brace>\{)|=\s*(?P<alias>[\w:]+))")
USING = re.compile(r"\busing\s+namespace\s+(?P<name>[\w:]+)\s*;")
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)", re.M)
CODE_NOISE = re.compile(r'R"(?P<d>[^(\s]*)\(.*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/',
                        re.S)


def tracked_sources() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the rule reads the tracked sources")
    listed = subprocess.run(["git", "ls-files", "*.h", "*.cpp"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [p for p in listed if not p.startswith(OTHER_OPERATORS)]


def code_of(text: str) -> str:
    """`text` without comments and string or character literals, line breaks kept (lines still count)."""
    return CODE_NOISE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def allowed(path: str) -> bool:
    """Whether the namespace `path` (a::b::c, no leading ::) is one the rule allows."""
    parts = path.split("::")
    if parts[0] == OP.namespace:
        return len(parts) > 1 and parts[1] in LAYERS
    return parts[0] in FOREIGN


def resolves(name: str, scopes: list[str | None]) -> bool:
    """Whether `name`, named inside the namespaces `scopes`, is an allowed namespace (looked up from the
    innermost enclosing namespace outwards, as C++ does)."""
    enclosing = [s for s in scopes if s]
    name = name.lstrip(":")
    return any(allowed("::".join(enclosing[:k] + [name])) for k in range(len(enclosing), -1, -1))


def namespace_violations(text: str) -> list[tuple[int, str]]:
    """(line, message) for each namespace opened, aliased or used that the rule does not allow."""
    code = code_of(text)
    found = []
    scopes: list[str | None] = []   # per open brace: the namespace it opened (None: any other brace)
    events = sorted([(m.start(), "ns", m) for m in NAMESPACE.finditer(code)] +
                    [(m.start(), "using", m) for m in USING.finditer(code)] +
                    [(m.start(), ch, None) for m in re.finditer(r"[{}]", code) for ch in (m.group(0),)],
                    key=lambda e: e[0])
    skip_brace = set()
    for pos, kind, m in events:
        line = code.count("\n", 0, pos) + 1
        if kind == "ns":
            if m["alias"]:
                if not resolves(m["alias"], scopes):
                    found.append((line, f"namespace alias {m['name']} = {m['alias']}"))
                continue
            enclosing = "::".join(s for s in scopes if s)
            name = m["name"]
            full = f"{enclosing}::{name}" if enclosing and name else (name or enclosing)
            if name and not allowed(full):
                found.append((line, f"namespace {full}"))
            scopes.append(name or None)
            skip_brace.add(m.start("brace"))
        elif kind == "using":
            if not resolves(m["name"], scopes):
                found.append((line, f"using namespace {m['name']}"))
        elif kind == "{":
            if pos not in skip_brace:
                scopes.append(None)
        elif scopes:
            scopes.pop()
    return found


def macro_violations(text: str) -> list[tuple[int, str]]:
    """(line, message) for each macro defined without the operator's prefix (mandated names aside)."""
    prefix = f"{OP.macro_prefix}_"
    code = code_of(text)
    return [(code.count("\n", 0, m.start()) + 1, f"macro {m['name']} lacks the prefix {prefix}")
            for m in DEFINE.finditer(code)
            if not m["name"].startswith(prefix) and not any(p.fullmatch(m["name"]) for p in MANDATED_MACROS)]


def violations(path: str, text: str) -> list[str]:
    found = namespace_violations(text)
    if path.startswith(OPERATOR_DIRS):
        found += macro_violations(text)
    return [f"{path}:{line}: {message}" for line, message in sorted(found)]


def test_every_tracked_cpp_source_keeps_the_names_rule():
    sources = tracked_sources()
    assert any(p.startswith("op_kernel/") for p in sources) and any(p.startswith("twin/") for p in sources)
    found = [v for p in sources for v in violations(p, (ROOT / p).read_text(encoding="utf-8"))]
    assert not found, "C++ names outside the rule (tests/tooling/test_cpp_names.py):\n" + "\n".join(found)


@pytest.mark.parametrize("path, text, expected", [
    ("op_kernel/k.h", "namespace rms_norm_backward_impl {\n}\n", ["op_kernel/k.h:1: namespace rms_norm_backward_impl"]),
    ("op_host/tiling/t.cpp", "// c\nnamespace rmsnorm_backward {\nint f();\n}\n",
     ["op_host/tiling/t.cpp:2: namespace rmsnorm_backward"]),
    ("op_host/tiling/t.cpp", "namespace rmsnorm_backward {\nnamespace helpers {\n}\n}\n",
     ["op_host/tiling/t.cpp:1: namespace rmsnorm_backward",
      "op_host/tiling/t.cpp:2: namespace rmsnorm_backward::helpers"]),
    ("framework/a.cpp", "namespace layout = rms_norm_backward_layout;\n",
     ["framework/a.cpp:1: namespace alias layout = rms_norm_backward_layout"]),
    ("framework/a.cpp", "using namespace anchor;\n", ["framework/a.cpp:1: using namespace anchor"]),
    ("op_kernel/k.h", "#pragma once\n/* a\n   b */\n#define RMS_NORM_BACKWARD_LAYOUT inline constexpr\n",
     ["op_kernel/k.h:4: macro RMS_NORM_BACKWARD_LAYOUT lacks the prefix RMSNB_"]),
    ("op_host/p.h", "#ifndef RMS_NORM_BACKWARD_PROTO_H_\n#define RMS_NORM_BACKWARD_PROTO_H_\n#endif\n",
     ["op_host/p.h:2: macro RMS_NORM_BACKWARD_PROTO_H_ lacks the prefix RMSNB_"]),
])
def test_a_planted_violation_is_named_with_its_file_and_line(path, text, expected):
    assert violations(path, text) == expected


@pytest.mark.parametrize("path, text", [
    ("op_kernel/k.h", "namespace rmsnorm_backward::kernel {\nnamespace {\n}\n}\n"),
    ("op_host/tiling/t.cpp", "namespace rmsnorm_backward::tiling {\nnamespace {\nnamespace ref = reference_platform;\n}\n}\n"
                             "namespace rmsnorm_backward::tiling::reference_platform {\n}\n"),
    ("op_host/x.cpp", "namespace optiling {\n}\nnamespace ge {\nvoid f() { if (1) { } }\n}\n#define RMSNB_X 1\n"),
    ("framework/a.cpp", 'const char *s = "namespace nope {";  // namespace nope {\n/* namespace nope { */\n'),
    ("twin/src/a.cpp", "namespace twin::host {\nnamespace detail {\n}\n}\n#define TWIN_X 1\n"),
    ("op_host/op_api/aclnn_rms_norm_backward.h", "#ifndef ACLNN_RMS_NORM_BACKWARD_H_\n#define ACLNN_RMS_NORM_BACKWARD_H_\n"),
])
def test_names_within_the_rule_pass(path, text):
    assert violations(path, text) == []
