# SPDX-License-Identifier: BSD-3-Clause
"""The torch_npu adapter (framework/torch_npu_adapter): its compile against torch's headers and the
torch_npu wheel's include tree (and the aclnn header and example against that acl.h), its library
search, its build script's refusal without CANN, and, where CANN, torch_npu, an NPU and the built
adapter are all present, its results.

torch_npu is never imported in this process (without CANN it ends the process): probes run in a
subprocess, and only when ASCEND_HOME_PATH says CANN is installed.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torch_npu_headers import include_dir, torch_version

from rmsnorm_backward import op_def, resources
from rmsnorm_backward.npu_adapter import NPU_ADAPTER

ROOT = resources.checkout()
ADAPTER = ROOT / "framework" / "torch_npu_adapter"
OP = op_def.load()
ACLNN = f"aclnn{OP.type}"

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include "opapi_library.h"
using namespace rmsnorm_backward::npu;
int main(int argc, char **argv) {
    try {
        OpApi api = FindOpApi(CandidateLibraries(std::getenv("ASCEND_CUSTOM_OPP_PATH"), std::getenv("ASCEND_OPP_PATH"),
                                                 std::getenv("ASCEND_HOME_PATH"), argv[1]), argv[2]);
        std::printf("%s\n", api.library.c_str());
    } catch (const std::runtime_error &e) {
        std::printf("ERROR %s\n", e.what());
    }
}
"""


def gxx(*args):
    subprocess.run(["g++", "-std=c++17", "-O0", *map(str, args)], check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    """search(env) -> the library the adapter's search picks (or 'ERROR ...'), among fake packages."""
    root = tmp_path_factory.mktemp("opp")
    (root / "driver.cpp").write_text(DRIVER)
    driver = root / "driver"
    gxx("-I", ADAPTER / "csrc", root / "driver.cpp", ADAPTER / "csrc" / "opapi_library.cpp", "-ldl", "-o", driver)
    exporting, other = root / "exporting.cpp", root / "other.cpp"
    exporting.write_text(f'extern "C" int {ACLNN}GetWorkspaceSize() {{ return 0; }}\n'
                         f'extern "C" int {ACLNN}() {{ return 0; }}\n')
    other.write_text('extern "C" int aclnnSomethingElse() { return 0; }\n')
    for lib_dir, src in ((root / "pkg_a/vendors/other/op_api/lib", other),
                         (root / "pkg_b/vendors/ours/op_api/lib", exporting),
                         (root / "dynlib/op_api/lib", exporting),
                         (root / f"cann/opp/vendors/{OP.vendor}/op_api/lib", exporting)):
        lib_dir.mkdir(parents=True)
        gxx("-shared", "-fPIC", src, "-o", lib_dir / "libcust_opapi.so")

    def run(**env):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
        clean.update({k: str(v) for k, v in env.items()})
        out = subprocess.run([str(driver), OP.vendor, ACLNN], env=clean, capture_output=True, text=True,
                             timeout=60, check=True).stdout.strip()
        return out.replace(str(root) + "/", "")

    run.root = root
    return run


def test_search_skips_a_package_without_the_operator(search):
    paths = f"{search.root}/pkg_a/vendors/other:{search.root}/pkg_b/vendors/ours"
    assert search(ASCEND_CUSTOM_OPP_PATH=paths) == "pkg_b/vendors/ours/op_api/lib/libcust_opapi.so"


def test_search_takes_a_library_directory_entry_first_come(search):
    paths = f"{search.root}/dynlib/op_api/lib/:{search.root}/pkg_b/vendors/ours"
    assert search(ASCEND_CUSTOM_OPP_PATH=paths) == "dynlib/op_api/lib/libcust_opapi.so"


def test_search_falls_back_to_the_default_install_location(search):
    expected = f"cann/opp/vendors/{OP.vendor}/op_api/lib/libcust_opapi.so"
    assert search(ASCEND_HOME_PATH=search.root / "cann") == expected
    assert search(ASCEND_CUSTOM_OPP_PATH=f"{search.root}/pkg_a/vendors/other",
                  ASCEND_OPP_PATH=search.root / "cann/opp") == expected


def test_search_failure_lists_every_place_it_looked(search):
    out = search(ASCEND_CUSTOM_OPP_PATH=f"{search.root}/pkg_a/vendors/other:{search.root}/nowhere")
    assert out.startswith(f"ERROR {ACLNN} was not found in an installed custom operator package")
    assert f"pkg_a/vendors/other/op_api/lib/libcust_opapi.so: does not export {ACLNN}GetWorkspaceSize" in out
    assert "nowhere/op_api/lib/libcust_opapi.so: no such file" in out
    assert "(none: set ASCEND_CUSTOM_OPP_PATH" in search()


def test_build_script_refuses_without_cann_and_explains_itself(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}

    def setup(*args):
        return subprocess.run([sys.executable, str(ADAPTER / "setup.py"), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    r = setup("build_ext")
    assert r.returncode != 0
    assert "ASCEND_HOME_PATH is not set" in r.stderr
    r = setup("--help")
    assert r.returncode == 0
    assert "pip install --no-build-isolation framework/torch_npu_adapter" in r.stdout


OPBASE = os.environ.get("OPBASE_SRC")
# aclnn/acl_meta.h is opbase's, in neither torch_npu's wheel nor PyPI. Without an opbase checkout
# (OPBASE_SRC), as in CI, the adapter gets these declarations of the aclnn calls it and the generated
# aclnn header use, over the wheel's real acl/acl.h, so everything else is still the real thing.
ACL_META = """#pragma once
#include <cstdint>
#include "acl/acl.h"
typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;
typedef int32_t aclnnStatus;
aclTensor *aclCreateTensor(const int64_t *view_dims, uint64_t view_dims_num, aclDataType data_type,
                           const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storage_dims,
                           uint64_t storage_dims_num, void *tensor_data);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
"""


def acl_includes(tmp_path: Path) -> tuple[list, str]:
    """Include dirs for acl/acl.h (the torch_npu wheel's) and aclnn/acl_meta.h, and where the latter is from."""
    if OPBASE and Path(OPBASE).is_dir():
        return [include_dir(), Path(OPBASE) / "include" / "nnopbase"], "opbase"
    (tmp_path / "aclnn").mkdir()
    (tmp_path / "aclnn" / "acl_meta.h").write_text(ACL_META)
    return [include_dir(), tmp_path], "the declarations above (OPBASE_SRC not set)"


def syntax_check(source: Path, includes: list, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", *flags, *(f"-I{p}" for p in includes),
                           str(source)], capture_output=True, text=True, timeout=900)


def test_adapter_compiles_against_torch_and_the_torch_npu_wheel_headers(tmp_path):
    import sysconfig

    import torch
    from torch.utils.cpp_extension import include_paths
    acl, meta_from = acl_includes(tmp_path)
    includes = [*include_paths(), sysconfig.get_paths()["include"], *acl, ADAPTER / "csrc", ROOT / "op_host" / "op_api",
                ROOT / "op_host"]
    proc = syntax_check(ADAPTER / "csrc" / "rms_norm_backward_npu.cpp", includes, f"-DRMSNB_VENDOR={OP.vendor}",
                        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}")
    assert proc.returncode == 0, f"torch {torch_version()}, acl_meta.h from {meta_from}: " + proc.stderr[-4000:]
    assert [line for line in proc.stderr.splitlines() if "warning:" in line and str(ADAPTER) in line] == []


def test_aclnn_header_and_example_compile_against_the_real_acl_header(tmp_path):
    acl, meta_from = acl_includes(tmp_path)
    main = ROOT / "examples" / "aclnn" / "main.cpp"
    proc = syntax_check(main, [*acl, ROOT / "op_host" / "op_api"], "-Werror")
    assert proc.returncode == 0, f"acl_meta.h from {meta_from}: " + proc.stderr[-4000:]


def npu_unavailable() -> str | None:
    """Why the adapter cannot run here, or None when it can."""
    if not os.environ.get("ASCEND_HOME_PATH"):
        return "CANN is absent (ASCEND_HOME_PATH is not set), so are torch_npu and an NPU"
    probe = ("import torch, torch_npu; assert torch.npu.is_available(), 'no NPU visible'; "
             f"import {NPU_ADAPTER} as a; print(a.library())")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return f"torch_npu, an NPU, the built adapter or the installed operator package is missing: {last}"
    return None


NPU_CHECK = """
import numpy as np, torch, torch_npu
import rmsnorm_backward.torch
from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare
from rmsnorm_backward.torch._bridge import to_numpy
rng = np.random.default_rng()
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    x = torch.from_numpy(rng.standard_normal((33, 4, 1000))).to(dtype)
    dy = torch.from_numpy(rng.standard_normal((1, 4, 1000))).to(dtype).expand(33, 4, 1000)
    gamma = torch.from_numpy(rng.standard_normal((4, 1000))).to(dtype)
    rstd = torch.rsqrt(x.float().square().mean((1, 2), keepdim=True) + 1e-6)
    dx, dgamma = torch.ops.rmsnorm_backward.rms_norm_backward(dy.npu(), x.npu(), rstd.npu(), gamma.npu())
    g_dx, g_dgamma = golden(*(t.float().numpy() for t in (dy, x, rstd, gamma)))
    name = str(dtype).removeprefix("torch.")
    for report in (compare(to_numpy(dx.cpu()), g_dx, name),
                   compare(to_numpy(dgamma.cpu()), g_dgamma, "float32", round_golden=False)):
        assert report.passed, f"{name}: {report}"
    norm = rmsnorm_backward.torch.RMSNorm((4, 1000), eps=1e-6, dtype=dtype).npu()
    x_npu = x.npu().requires_grad_()
    norm(x_npu).backward(dy.npu())
    g_dx, g_dgamma = golden(*(t.float().numpy() for t in (dy, x, rstd, torch.ones(4, 1000))))
    for report in (compare(to_numpy(x_npu.grad.cpu()), g_dx, name),
                   compare(to_numpy(norm.weight.grad.cpu()), g_dgamma, name)):
        assert report.passed, f"RMSNorm {name}: {report}"
    r = torch.from_numpy(rng.standard_normal((33, 4, 1000))).to(dtype)
    runs = []
    for device in ("cpu", "npu"):  # npu_add_rms_norm forward, the operator's backward with dres
        leaves = [t.to(device).requires_grad_() for t in (x, r, gamma)]
        y, s = rmsnorm_backward.torch.add_rms_norm(*leaves)
        torch.autograd.backward((y, s), (dy.to(device), dy.to(device)))
        runs.append([t.detach().cpu() for t in (y, s, *(leaf.grad for leaf in leaves))])
    for what, cpu, npu in zip(("y", "s", "dx", "dresidual", "dgamma"), *runs):
        report = compare(to_numpy(npu), cpu.double().numpy(), name)
        assert report.passed, f"add_rms_norm {what} {name}: {report}"
"""


NPU_MISSING = npu_unavailable()


@pytest.mark.skipif(NPU_MISSING is not None, reason=str(NPU_MISSING))
def test_npu_results_meet_the_precision_standard():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(NPU_CHECK)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
