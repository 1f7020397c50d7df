# SPDX-License-Identifier: BSD-3-Clause
"""The Ascend C sources of a project tree that must compile against CANN's headers: the operator's
kernel (its entry dispatches every tiling key, so one compile instantiates every path), the twin's
demo, and the kernels the tests run -- .cpp files under tests/ and twin/tests/ and the kernel texts
the test modules there hold as module-level strings, compiled once per value of the macros they
leave to the test.
"""
from __future__ import annotations

import importlib.util
import itertools
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

PRELUDE = '#include "kernel_operator.h"\nusing namespace AscendC;\n'  # what twin/tests/small_kernels.run adds

# Values the test modules pass for the macros their kernel texts leave open (the types every vector
# instruction the tests use supports, flags both ways, small counts). A macro missing here that a
# text needs shows up as a compile error naming it.
MACRO_VALUES = {
    "ELEM": ("half", "bfloat16_t"),
    "DTYPE": ("float", "half"),
    "TWIN_TILING_STRUCT": ("DemoTiling",),
    "QUALIFIER": ("",),  # test_queues' FreeTensor text: empty compiles, "const" must not (a twin test)
    "ALIGN_N": ("256",),  # test_alignment_boundaries: elements per call, and the offsets it tries
    "ALIGN_O": ("16", "32"),
}
FLAG_VALUES = ("0", "1")  # macros tested with #if / #ifdef: both branches
COUNT_VALUE = "2"         # any other macro the text uses but does not define

# Texts that reach into the twin itself, so no real Ascend C toolchain can compile them.
TWIN_ONLY = re.compile(r"\btwin::|\b_twin\b")


@dataclass(frozen=True)
class Unit:
    name: str                       # for reports: path in the tree, plus the text's name and defines
    source: Path                    # the file g++ compiles
    defines: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()


def collect(tree: Path, scratch: Path) -> tuple[list[Unit], list[tuple[str, str]]]:
    """The units of `tree` (kernel texts written under `scratch`) and the (name, reason) left out."""
    tree = tree.resolve()
    kernel_dir = tree / "op_kernel"
    units = [Unit("op_kernel/rms_norm_backward.cpp", kernel_dir / "rms_norm_backward.cpp",
                  include_dirs=(kernel_dir,)),
             Unit("twin/demo/scaled_sum.cpp", tree / "twin" / "demo" / "scaled_sum.cpp")]
    skipped = []
    for path in files_under_tests(tree, "*.cpp"):
        text = path.read_text()
        if "__global__" in text:
            units.append(Unit(str(path.relative_to(tree)), path))
    for path in files_under_tests(tree, "*.py"):
        if "__global__" not in path.read_text() or path.parent.name == "conformance":
            continue
        for attr, text in module_kernel_texts(path, tree / "tests"):
            name = f"{path.relative_to(tree)}:{attr}"
            if TWIN_ONLY.search(text):
                skipped.append((name, "uses the twin's own launch state (twin::), which only the twin has"))
                continue
            units.extend(text_units(name, text, scratch))
    return units, skipped


def files_under_tests(tree: Path, pattern: str) -> list[Path]:
    """The files matching `pattern` under the operator's tests/ and the twin's twin/tests/."""
    return sorted(p for d in (tree / "tests", tree / "twin" / "tests") for p in d.rglob(pattern))


def module_kernel_texts(path: Path, tests: Path) -> list[tuple[str, str]]:
    """Module-level strings of a test module that hold a kernel entry (extern "C" __global__).
    The module is imported as pytest would, with its own directory and tests/ on the path."""
    module_name = f"_conformance_{zlib.crc32(str(path).encode()):08x}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    saved = list(sys.path)
    sys.path[:0] = [str(path.parent), str(tests)]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
        del sys.modules[module_name]
    # A text the module completes in Python before compiling (types and counts declared ahead of it)
    # names that head in its KERNEL_TEXT_HEADS, so it compiles here as its tests compile it.
    heads = getattr(module, "KERNEL_TEXT_HEADS", {})
    texts = {attr: heads.get(attr, "") + value for attr, value in vars(module).items()
             if isinstance(value, str) and not attr.startswith("_") and re.search(r"\b__global__\b", value)}
    # A text that is only the start of a longer one (a shared head) is compiled as part of it.
    return [(attr, text) for attr, text in texts.items()
            if not any(other != text and text in other for other in texts.values())]


def text_units(name: str, text: str, scratch: Path) -> list[Unit]:
    if '#include "kernel_operator.h"' not in text:
        text = PRELUDE + text
    scratch.mkdir(parents=True, exist_ok=True)
    source = scratch / f"{re.sub(r'[^A-Za-z0-9]+', '_', name)}_{zlib.crc32(text.encode()):08x}.cpp"
    source.write_text(text)
    open_macros = macros_left_open(text)
    choices = [[f"{m}={v}" for v in values_for(m, text)] for m in open_macros]
    units = []
    for combo in itertools.product(*choices):
        defines = tuple(d for d in combo if not d.endswith("=<undefined>"))
        label = f"{name} [{' '.join(combo)}]" if combo else name
        units.append(Unit(label, source, defines))
    return units


def macros_left_open(text: str) -> list[str]:
    """Macros the text tests or uses without defining: the ones its test passes with -D."""
    defined = set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.M))
    tested = set()
    for directive in re.findall(r"^\s*#\s*(?:if|elif|ifdef|ifndef)\b(.*)$", text, re.M):
        tested.update(w for w in re.findall(r"\b[A-Z_][A-Z0-9_]*\b", directive) if w != "defined")
    used = {m for m in MACRO_VALUES if re.search(rf"\b{m}\b", text)}
    used |= set(re.findall(r"(?<!::)\b([A-Z][A-Z0-9_]{2,})\b", _code(text))) - declared_names(text)  # X::NAME: an enumerator
    if re.search(r"\bGET_TILING_DATA\(", text):
        used.add("TWIN_TILING_STRUCT")  # the struct GET_TILING_DATA reads (see TILING_MACROS)
    return sorted((tested | used) - defined)


def values_for(macro: str, text: str) -> tuple[str, ...]:
    if macro in MACRO_VALUES:
        return MACRO_VALUES[macro]
    if re.search(rf"^\s*#\s*if(?:n?def)?\b.*\b{macro}\b", text, re.M):
        if re.search(rf"^\s*#\s*ifn?def\s+{macro}\b", text, re.M):
            return ("<undefined>", "1")
        return FLAG_VALUES
    return (COUNT_VALUE,)


def _code(text: str) -> str:
    """The text without comments, string literals and preprocessor lines."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)


def declared_names(text: str) -> set[str]:
    """Upper-case names the text declares itself (constants, enumerators, types) or the API provides."""
    code = _code(text)
    declaration = r"\b(?:constexpr|const|enum(?:\s+class)?|struct|class|using)\s+(?:\w+\s+)*?([A-Z][A-Z0-9_]+)\b"
    names = set(re.findall(declaration, code))
    names.update(re.findall(r"\b([A-Z][A-Z0-9_]+)\s*=(?!=)", code))  # initialised in a declaration list
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        names.update(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", body))
    return names | API_UPPER_CASE


# Upper-case names of the Ascend C API that kernel texts use (pipes, positions, events, modes...).
API_UPPER_CASE = {"AIV", "AIC", "ASCEND_IS_AIV", "ASCEND_IS_AIC", "ASCEND_IS_NOT_AIV", "ASCEND_IS_NOT_AIC",
                  "MAX_REPEAT_TIMES", "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "DEFAULT_REPEAT_STRIDE",
                  "HALF_DEFAULT_REPEAT_STRIDE", "DEFAULT_BLK_NUM", "GM_ADDR", "PIPE_ALL", "PIPE_V", "PIPE_S", "PIPE_MTE2", "PIPE_MTE3", "VECIN", "VECOUT",
                  "VECCALC", "CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC",
                  "CAST_ODD", "NORMAL", "COUNTER", "MTE2_V", "V_MTE2", "V_MTE3", "MTE3_V", "MTE2_MTE3",
                  "MTE3_MTE2", "V_S", "S_V", "MTE2_S", "S_MTE2", "MTE3_S", "S_MTE3", "TILING_KEY_IS",
                  "GET_TILING_DATA", "GET_TILING_DATA_WITH_STRUCT", "KERNEL_TASK_TYPE_DEFAULT", "UINT64_MAX",
                  "UINT32_MAX", "INT32_MAX", "MASK_PLACEHOLDER", "LCM", "MAX", "ASCEND_IS_AIV", "ASCEND_IS_AIC",
                  "KERNEL_TYPE_AIV_ONLY", "UB", "CMPMODE", "SELMODE", *(f"EVENT_ID{i}" for i in range(8))}
