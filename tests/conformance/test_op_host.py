# SPDX-License-Identifier: BSD-3-Clause
"""op_host against CANN: its sources compiled against the real public headers (when the checkouts are
given), the output checks the TilingFunc makes for an aclnn caller, and the op info generator
agreeing with what the OpDef registers (CANN's AddConfig defaults, read from metadef's source)."""
import json
import re
import subprocess
from pathlib import Path

import pytest
from cann_stand_in import MISSING, SOURCES, WHY_MISSING, merge_headers

from rmsnorm_backward import op_def, resources

ROOT = resources.checkout()
OP = op_def.load()
HOST_SOURCES = [f"op_host/{OP.file}_def.cpp", f"op_host/{OP.file}_tiling.cpp"]


@pytest.fixture(scope="module")
def cann_include(tmp_path_factory):
    include = tmp_path_factory.mktemp("cann") / "include"
    merge_headers(include)
    return include


@pytest.mark.skipif(bool(MISSING), reason=WHY_MISSING)
@pytest.mark.parametrize("source", HOST_SOURCES)
def test_op_host_compiles_against_the_public_headers_without_warnings(cann_include, source):
    proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-I", str(cann_include), "-I", str(ROOT / "op_host"), "-I", str(ROOT / "op_kernel"),
                           str(ROOT / source)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ours = [line for line in proc.stderr.splitlines() if "warning:" in line and str(ROOT) in line]
    assert ours == []


DRIVER = r"""
#include <cstdio>
#include <iostream>
#include <sstream>
#include "tiling/rms_norm_backward_tiling.h"
std::vector<int64_t> Shape(const std::string &text) {
    std::vector<int64_t> dims;
    std::istringstream in(text);
    for (std::string d; std::getline(in, d, ',');) dims.push_back(std::stoll(d));
    return dims;
}
int main() {  // per line: x gamma x_dtype dx dx_dtype dgamma dgamma_dtype -> the check's sentence or OK
    std::string x, gamma, xt, dx, dxt, dg, dgt;
    while (std::cin >> x >> gamma >> xt >> dx >> dxt >> dg >> dgt) {
        rmsnorm_backward::tiling::TilingInput in;
        in.x_shape = Shape(x); in.gamma_shape = Shape(gamma); in.x_dtype = xt;
        std::string why = rmsnorm_backward::tiling::CheckOutputs(in, Shape(dx), dxt, Shape(dg), dgt).message;
        std::printf("%s\n", why.empty() ? "OK" : why.c_str());
    }
}
"""


@pytest.fixture(scope="module")
def check_outputs(tmp_path_factory):
    work = tmp_path_factory.mktemp("outputs")
    (work / "driver.cpp").write_text(DRIVER)
    exe = work / "driver"
    subprocess.run(["g++", "-std=c++17", "-I", str(ROOT / "op_host"), str(work / "driver.cpp"),
                    *map(str, sorted((ROOT / "op_host/tiling").glob("*.cpp"))), "-o", str(exe)],
                   check=True, capture_output=True, timeout=300)

    def run(cases):
        lines = "".join(" ".join(",".join(map(str, v)) if isinstance(v, tuple) else v for v in case) + "\n"
                        for case in cases)
        return subprocess.run([str(exe)], input=lines, capture_output=True, text=True, check=True,
                              timeout=60).stdout.splitlines()
    return run


def test_outputs_an_aclnn_caller_passes_are_checked(check_outputs, rng):
    rows, cols = (int(v) for v in rng.integers(1, 5000, size=2))
    x, gamma = (rows, cols), (cols,)
    dtype = str(rng.choice([t.name for t in OP.type_values]))
    other = "float32" if dtype != "float32" else "float16"
    got = check_outputs([
        (x, gamma, dtype, x, dtype, gamma, "float32"),
        (x, gamma, dtype, (rows + 1, cols), dtype, gamma, "float32"),
        (x, gamma, dtype, x, other, gamma, "float32"),
        (x, gamma, dtype, x, dtype, (cols, 1), "float32"),
        (x, gamma, dtype, x, dtype, gamma, "float16"),
    ])
    assert got == [
        "OK",
        f"dx must have the shape of x (dx [{rows + 1}, {cols}], x [{rows}, {cols}]).",
        f"dx must have the dtype of x (dx {other}, x {dtype}).",
        f"dgamma must have the shape of gamma (dgamma [{cols}, 1], gamma [{cols}]).",
        "dgamma must be float32, whatever the dtype of gamma (got float16).",
    ]


def test_tiling_func_checks_the_outputs_and_the_workspace_slot():
    text = (ROOT / f"op_host/{OP.file}_tiling.cpp").read_text()
    assert "CheckOutputs(in, Dims(context->GetOutputShape(kDx))" in text
    assert re.search(r"GetWorkspaceSizes\(1\);\s+if \(workspaces == nullptr\)", text)


@pytest.mark.skipif("METADEF_SRC" in MISSING, reason="METADEF_SRC not set to a metadef checkout: CANN's "
                                                     "AddConfig defaults are read from its source")
def test_op_info_flags_are_what_add_config_registers():
    # AddConfig(soc) without a config object registers CANN's defaults, set in OpAICoreConfig's
    # constructor from a SoC name; the generated op info must say the same.
    source = (Path(SOURCES["METADEF_SRC"]) / "base/asc/opdef/op_def_impl.cc").read_text()
    body = re.search(r"void OpAICoreConfigImpl::Construct\(OpAICoreConfig \*parent_this, const char \*soc\) \{(.*?)\n\}",
                     source, re.S).group(1)
    defaults = dict(re.findall(r'AddCfgItem\("([\w.]+)\.flag", "(\w+)"\)', body))
    assert "dynamicFormat" in defaults
    assert "AddConfig(\"" in (ROOT / f"op_host/{OP.file}_def.cpp").read_text()
    for soc in OP.socs:
        info = json.loads((ROOT / f"op_host/op_info/aic-{soc}-ops-info.json").read_text())[OP.type]
        assert {k: info[k]["flag"] for k in defaults} == defaults
