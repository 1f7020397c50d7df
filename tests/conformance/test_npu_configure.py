# SPDX-License-Identifier: BSD-3-Clause
"""The NPU build configured against CANN's public build modules and headers, without CANN.

`cmake --preset <soc>` runs against a stand-in CANN root (cann_stand_in.py) and so through CANN's own
configure steps: the op_host sources compiled against the real headers into the library op_build
reads, the aclnn/proto/tiling library, kernel and package functions of find_package(ASC), and
ascendc.cmake for the chip. The tests check the build graph those functions made: every target of
the package, with the right SoC family, chip and arch.

What only a CANN machine shows: op_build's real output, the kernel binaries, the package contents.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest
from cann_stand_in import MISSING, SOURCES, WHY_MISSING, stand_in_cann

from rmsnorm_backward import op_def, resources

ROOT = resources.checkout()
OP = op_def.load()
pytestmark = pytest.mark.skipif(bool(MISSING), reason=WHY_MISSING)


@pytest.fixture(scope="module", params=OP.socs)
def configured(request, tmp_path_factory):
    soc = request.param
    base = tmp_path_factory.mktemp(f"npu-{soc}")
    cann = stand_in_cann(base / "cann")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    env["ASCEND_HOME_PATH"] = str(cann)
    build = base / "build"
    proc = subprocess.run(["cmake", "--preset", soc, "-S", str(ROOT), "-B", str(build), "-G", "Unix Makefiles"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    targets = subprocess.run(["cmake", "--build", str(build), "--target", "help"], capture_output=True, text=True,
                             env=env, timeout=300, check=True).stdout
    return soc, build, proc.stdout, targets


def build_files(build: Path) -> str:
    """The generated makefiles and link lines: the commands the build will run."""
    return "\n".join(p.read_text(errors="replace") for p in build.rglob("*")
                     if p.is_file() and (p.suffix == ".make" or p.name == "link.txt"))


def test_configure_reaches_canns_own_steps(configured):
    soc, build, out, _ = configured
    assert f"CANN: " in out and f"for {soc} ({OP.soc_chips[soc]})" in out
    assert "Opbuild generating sources - done" in out
    autogen = build / "autogen"
    assert (autogen / f"aclnn_{OP.file}.cpp").is_file() and (autogen / "op_proto.cc").is_file()
    assert (autogen / f"aic-{soc}-ops-info.ini").is_file()


def test_build_graph_holds_every_package_target(configured):
    soc, build, _, targets = configured
    names = set(re.findall(r"^\.\.\. (\S+)", targets, re.M))
    for lib in ("cust_opapi", "cust_op_proto", "cust_optiling"):
        assert any(n.endswith(lib) for n in names), f"no {lib} target in {sorted(names)}"
    assert f"{OP.type}_{soc}" in names, sorted(names)
    assert "package" in names and "kernel_device_check" in names


def test_readme_builds_targets_the_graph_has(configured):
    _, _, _, targets = configured
    names = set(re.findall(r"^\.\.\. (\S+)", targets, re.M))
    readme = (ROOT / "docs" / "npu_build.md").read_text().split("## On a CANN machine", 1)[1]
    used = set(re.findall(r"--target\s+(\w+)", readme))
    assert {"binary", "package", "kernel_device_check"} <= used <= names


def test_tiling_and_proto_link_rt2_registry_as_a_whole_archive(configured):
    _, build, _, _ = configured
    links = {p.parent.name: p.read_text() for p in build.rglob("link.txt")}
    for lib in ("cust_optiling", "cust_op_proto"):
        (text,) = [t for name, t in links.items() if lib in name]
        assert re.search(r"--whole-archive\s+(-l)?\S*rt2_registry\S*\s+-Wl,--no-whole-archive", text), text


def test_binary_kernels_are_compiled_for_the_family_and_the_chip_for_dav_c220(configured):
    soc, build, _, _ = configured
    files = build_files(build)
    assert f"--compute-unit={soc}" in files and f"--config-ini={build}/autogen/aic-{soc}-ops-info.ini" in files
    # ascendc.cmake's vector build mode for the chip, which its bisheng flags turn into the arch
    assert "-DBUILD_MODE=c220_aiv" in files and "c100" not in files
    flags = (Path(SOURCES["ASC_DEVKIT_SRC"]) / "cmake/asc/legacy_modules/bisheng_intf.cmake").read_text()
    assert re.search(r"add_library\(c220_aiv_intf_pub INTERFACE\)\s+target_compile_options\(c220_aiv_intf_pub "
                     r"INTERFACE\s+--cce-aicore-arch=dav-c220-vec", flags)


def test_unknown_soc_is_refused_in_one_sentence(tmp_path):
    cann = stand_in_cann(tmp_path / "cann")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    env["ASCEND_HOME_PATH"] = str(cann)
    proc = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"), "-DASCEND_COMPUTE_UNIT=ascend310p"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    err = re.sub(r"\s+", " ", proc.stderr)
    assert (f"ASCEND_COMPUTE_UNIT ascend310p is not a SoC family of {OP.type}: op_def/{OP.file}.toml lists "
            f"{', '.join(OP.socs)} (one preset each).") in err


def test_install_lays_out_the_cann_vendor_tree_package_sh_wraps(configured):
    soc, build, _, _ = configured
    rules = "\n".join(p.read_text() for p in build.rglob("cmake_install.cmake"))
    dests = {re.sub(r"/+", "/", d).rstrip("/") for d in re.findall(rf"{build}/+(packages/vendors/[^\"\s]*)", rules)}
    v, arch = f"packages/vendors/{OP.vendor}", os.uname().machine
    for path in ("op_api/lib/libcust_opapi.so", f"op_api/include/aclnn_{OP.file}.h",
                 f"op_proto/lib/linux/{arch}/libcust_opsproto_rt2.0.so", "op_proto/inc/op_proto.h",
                 f"op_impl/ai_core/tbe/op_tiling/lib/linux/{arch}/libcust_opmaster_rt2.0.so",
                 f"op_impl/ai_core/tbe/kernel/{soc}", "op_impl/ai_core/tbe/kernel/config",
                 f"op_impl/ai_core/tbe/config/{soc}/aic-{soc}-ops-info.json",
                 f"op_impl/ai_core/tbe/{OP.vendor}_impl/dynamic", "framework/tensorflow", "version.info"):
        assert f"{v}/{path}" in dests, path
    # where the package target's package.sh takes them from
    assert re.search(r'package\.sh".*\n\s+--build-dir "\$\{CMAKE_BINARY_DIR\}"', (ROOT / "cmake/npu.cmake").read_text())
