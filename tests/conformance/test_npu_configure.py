"""The NPU build configured against CANN's public build modules and headers, without CANN.

A stand-in CANN root is assembled from source checkouts of the public repositories (asc-devkit's
build modules in place of compiler/tikcpp/ascendc_kernel_cmake; the metadef, ge, opbase, asc-devkit
headers and the platform headers ATB carries merged into include/), plus stubs for what is closed: op_build (it writes the files the real
one generates, empty), the bisheng compiler, CANN's shared libraries (empty) and the two calls of
libboundscheck's securec.h that CANN's headers use (declarations). Then `cmake --preset
<soc>` runs CANN's own configure steps: the op_host sources compiled against the real headers into
the library op_build reads, the kernel and package functions, ascendc.cmake for the chip. The test
checks the build graph CANN's functions made: every target of the package, with the right SoC.

What only a CANN machine shows: op_build's real output, the kernel binaries, the package contents.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import op_def

ROOT = op_def.REPO_ROOT
OP = op_def.load()
SOURCES = {name: os.environ.get(name) for name in ("ASC_DEVKIT_SRC", "METADEF_SRC", "GE_SRC", "OPBASE_SRC", "ATB_SRC")}
MISSING = [name for name, path in SOURCES.items() if not path or not Path(path).is_dir()]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=(
    f"{', '.join(MISSING)} not set to source checkouts of the public CANN repositories "
    "(asc-devkit, metadef, ge, opbase, ascend-transformer-boost): the stand-in CANN root is made from them"))

# Header trees of the public repositories as CANN installs them under include/, first one wins.
HEADER_TREES = [("METADEF_SRC", "inc/external"), ("METADEF_SRC", "inc/external/asc"),
                ("GE_SRC", "inc/external"), ("GE_SRC", "inc/graph_metadef/external"),
                ("OPBASE_SRC", "include/nnopbase"), ("ASC_DEVKIT_SRC", "include/utils"),
                ("METADEF_SRC", "inc"), ("GE_SRC", "inc"),
                # the platform headers are in no public repository of their own; ATB carries them
                ("ATB_SRC", "src/kernels/tbe_adapter"),
                ("ATB_SRC", "src/kernels/tbe_adapter/stubs/include/metadef/inc/external")]

OP_BUILD = """#!/usr/bin/env python3
# Stand-in for CANN's closed op_build: writes, empty, the files it generates from the OpDef library.
import sys
from pathlib import Path
lib, out = Path(sys.argv[1]), Path(sys.argv[2])
assert lib.is_file(), f"op_build: {{lib}} was not built"
for name in ("aclnn_{file}.cpp", "aclnn_{file}.h", "op_proto.cc", "op_proto.h"):
    (out / name).write_text("")
for soc in {socs}:
    (out / f"aic-{{soc}}-ops-info.ini").write_text("[{type}]\\nopFile.value={file}\\nopInterface.value={file}\\n")
"""

# libboundscheck is open source but in none of these repositories; its two calls CANN's headers use.
SECUREC = """#include <stddef.h>
typedef int errno_t;
#define EOK 0
#ifdef __cplusplus
extern "C" {
#endif
errno_t memcpy_s(void *dest, size_t dest_max, const void *src, size_t count);
errno_t memset_s(void *dest, size_t dest_max, int c, size_t count);
#ifdef __cplusplus
}
#endif
"""


def merge_headers(include: Path) -> None:
    for var, sub in HEADER_TREES:
        tree = Path(SOURCES[var]) / sub
        for header in tree.rglob("*.h"):
            link = include / header.relative_to(tree)
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(header)


def stand_in_cann(root: Path) -> Path:
    modules = root / "compiler/tikcpp/ascendc_kernel_cmake"
    modules.parent.mkdir(parents=True)
    modules.symlink_to(Path(SOURCES["ASC_DEVKIT_SRC"]) / "cmake/asc")
    (root / "compiler/version.info").write_text("Version=stand-in\n")
    merge_headers(root / "include")
    (root / "include/securec.h").write_text(SECUREC)
    lib64 = root / "lib64"
    lib64.mkdir()
    empty = root / "empty.c"
    empty.write_text("")
    for lib in ("exe_graph", "register", "tiling_api", "platform", "graph", "graph_base", "c_sec",
                "ascendcl", "nnopbase", "opapi", "rt2_registry"):
        subprocess.run(["gcc", "-shared", "-o", str(lib64 / f"lib{lib}.so"), str(empty)], check=True)
    for archive in ("rt2_registry", "ascendc_runtime"):
        subprocess.run(["ar", "rcs", str(lib64 / f"lib{archive}.a")], check=True)
    stubs = {"tools/opbuild/op_build": OP_BUILD.format(file=OP.file, type=OP.type, socs=list(OP.socs)),
             "compiler/ccec_compiler/bin/bisheng": "#!/bin/sh\necho 'bisheng: stand-in' >&2\nexit 1\n"}
    for rel, text in stubs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    return root


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
