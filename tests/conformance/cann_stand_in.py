# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in CANN root made from source checkouts of the public CANN repositories (paths from
ASC_DEVKIT_SRC, METADEF_SRC, GE_SRC, OPBASE_SRC, ATB_SRC): asc-devkit's build modules where CANN
installs them, the public headers merged into include/ as CANN installs them, and stubs, written
here at run time, only for what is closed (op_build, bisheng, CANN's libraries: empty) plus the two
libboundscheck declarations CANN's headers use. Used by the tests of this folder; nothing is copied
into the repository.
"""
import os
import subprocess
from pathlib import Path

from rmsnorm_backward import op_def

OP = op_def.load()
SOURCES = {name: os.environ.get(name) for name in ("ASC_DEVKIT_SRC", "METADEF_SRC", "GE_SRC", "OPBASE_SRC", "ATB_SRC")}
MISSING = [name for name, path in SOURCES.items() if not path or not Path(path).is_dir()]
WHY_MISSING = (f"{', '.join(MISSING)} not set to source checkouts of the public CANN repositories "
               "(asc-devkit, metadef, ge, opbase, ascend-transformer-boost): the stand-in CANN root is made from them")

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
    """include/ as CANN installs it, from the public headers (links) and the securec.h stand-in."""
    for var, sub in HEADER_TREES:
        tree = Path(SOURCES[var]) / sub
        for header in tree.rglob("*.h"):
            link = include / header.relative_to(tree)
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(header)
    (include / "securec.h").write_text(SECUREC)


def stand_in_cann(root: Path) -> Path:
    modules = root / "compiler/tikcpp/ascendc_kernel_cmake"
    modules.parent.mkdir(parents=True)
    modules.symlink_to(Path(SOURCES["ASC_DEVKIT_SRC"]) / "cmake/asc")
    (root / "compiler/version.info").write_text("Version=stand-in\n")
    merge_headers(root / "include")
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
