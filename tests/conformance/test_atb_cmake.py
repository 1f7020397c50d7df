# SPDX-License-Identifier: BSD-3-Clause
"""framework/atb_plugin/CMakeLists.txt on its own (framework/atb_plugin/README.md's commands) against a stand-in install:
CANN's include/ is tests/tooling/stub_cann, ATB's is ATB_SRC/include, and libascendcl / libatb are the
stand-ins built as shared libraries (nnopbase and cust_opapi empty, their symbols in the stand-in
libascendcl). CMake must build the library and the demo, and the demo must run as it does in
test_atb_demo.py; without ATB_HOME_PATH the plugin says it is skipped and adds nothing."""
import os
import shutil
import subprocess

import pytest

from atb_build import HERE, PLAIN_TILING, PLUGIN, ROOT, STUB, atb_include


def shared_library(path, *sources, include=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = [f"-I{d}" for d in (STUB, ROOT / "op_host" / "op_api", *include)]
    subprocess.run(["g++", "-std=c++17", "-shared", "-fPIC", *flags, *map(str, sources), "-o", str(path)],
                   check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    include = atb_include()
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not on PATH")
    root = tmp_path_factory.mktemp("atb_install")
    (root / "cann").mkdir()
    (root / "cann" / "include").symlink_to(STUB)
    (root / "atb").mkdir()
    (root / "atb" / "include").symlink_to(include)
    shared_library(root / "cann" / "lib64" / "libascendcl.so", STUB / "acl_stub.cpp", *PLAIN_TILING)
    empty = root / "empty.cpp"
    empty.write_text("")
    shared_library(root / "cann" / "lib64" / "libnnopbase.so", empty)
    shared_library(root / "opp" / "op_api" / "lib" / "libcust_opapi.so", empty)
    shared_library(root / "atb" / "lib" / "libatb.so", HERE / "atb_stub.cpp", include=(include,))
    env = {k: v for k, v in os.environ.items() if k not in ("STUB_FAIL", "STUB_OUTPUTS")}
    env.update(ASCEND_HOME_PATH=str(root / "cann"), ATB_HOME_PATH=str(root / "atb"),
               ASCEND_CUSTOM_OPP_PATH=str(root / "opp"),
               LD_LIBRARY_PATH=f"{root / 'cann' / 'lib64'}:{root / 'atb' / 'lib'}")
    return root, env


def cmake(*args, env):
    return subprocess.run(["cmake", *args], capture_output=True, text=True, env=env, timeout=600)


def test_plugin_cmake_builds_the_library_and_the_demo_which_runs(install):
    root, env = install
    build = root / "build"
    configured = cmake("-S", str(PLUGIN), "-B", str(build), env=env)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    built = cmake("--build", str(build), "-j", "2", env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (build / "librms_norm_backward_atb.so").is_file()
    demo = subprocess.run([str(build / "examples_atb" / "rms_norm_backward_atb_demo")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert "ERROR" not in demo.stdout, demo.stdout
    assert demo.stdout.splitlines()[-1] == "aclFinalize"
    # The stand-in launch computes nothing: the demo's check fails on every element of dx and dgamma.
    assert demo.returncode == 1 and f"{32 * 64 * 128 + 128} mismatches" in demo.stdout


def test_plugin_cmake_without_atb_adds_nothing_and_says_so(install):
    root, env = install
    env = {**env, "ATB_HOME_PATH": str(root / "nowhere")}
    configured = cmake("-S", str(PLUGIN), "-B", str(root / "build_without"), env=env)
    assert configured.returncode == 0, configured.stderr
    assert f"ATB operation skipped: no ATB headers under ATB_HOME_PATH='{root / 'nowhere'}'" in configured.stdout
    built = cmake("--build", str(root / "build_without"), env=env)
    assert built.returncode == 0 and not list((root / "build_without").rglob("*rms_norm_backward_atb*"))
