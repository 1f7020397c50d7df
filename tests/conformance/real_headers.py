# SPDX-License-Identifier: BSD-3-Clause
"""CANN's own Ascend C headers in CPU-debug mode: where they are, the pieces a source checkout lacks,
and a g++ compile of one source against them with its errors counted per file.

The headers come from an installed CANN (ASCEND_HOME_PATH) or from source checkouts of the public
asc-devkit and asc-tools repositories (ASC_DEVKIT_SRC and ASC_TOOLS_SRC). Nothing of them is copied
into this repository: a checkout lacks what CANN's build generates or ships prebuilt, and those pieces
are written at run time into a scratch directory -- the tiling-structs header by the checkout's own
generator script, the intrinsics header as a stand-in of our own (declarations that do nothing;
nothing compiled here is linked or run).
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

CXX = os.environ.get("CXX", "g++")

# CPU-debug mode for Atlas A2 vector cores, as CANN's CPU-debug library is built for ascend910B1.
CPU_DEBUG_DEFINES = ("__CCE_KT_TEST__=1", "ASCENDC_CPU_DEBUG=1", "__CCE_AICORE__=220", "__NPU_ARCH__=2201",
                     "__DAV_C220__", "__DAV_C220_VEC__")
MODES = {"syntax": "-fsyntax-only", "object": "-c"}

# Include directories of a source checkout, as the two repositories' CMake interface targets list them.
DEVKIT_DIRS = ("", "impl", "impl/basic_api", "impl/basic_api/reg_compute", "impl/simt_api", "impl/c_api", "include",
               "include/basic_api", "include/basic_api/reg_compute", "include/simt_api", "include/simt_api/cpp",
               "include/c_api")
TOOLS_DIRS = ("cpudebug/include", "cpudebug/utils", "cpudebug/utils/include", "cpudebug/utils/include/utils")
# Relative to <ASCEND_HOME_PATH>/<arch>-linux: where an installed toolkit puts the same headers.
INSTALLED_DIRS = ("asc/include", "asc/include/basic_api", "asc/include/basic_api/reg_compute", "asc/include/simt_api",
                  "asc/include/simt_api/cpp", "asc/include/c_api", "asc/impl", "asc/impl/basic_api",
                  "asc/impl/basic_api/reg_compute", "asc/impl/simt_api", "asc/impl/c_api", "ascendc/include",
                  "ascendc/include/basic_api", "ascendc/include/basic_api/impl", "tikcpp/tikcfw",
                  "tikcpp/tikcfw/impl", "tikcpp/tikcfw/interface", "include", "include/ascendc")
INSTALLED_TOOLS_DIRS = ("tools/cpudebug/include", "tools/tikicpulib/lib/include")

TILING_SCRIPT = "impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py"

# The kernel's tiling macros: CANN's op build generates them from the op's registered tiling struct.
# In CPU-debug mode the struct is read from the tiling argument's bytes; GET_TILING_DATA names its
# struct by TWIN_TILING_STRUCT, the define the twin's tests already pass for it.
TILING_MACROS = """\
#pragma once
#include <cstring>
#define GET_TILING_DATA_WITH_STRUCT(type, var, tiling) \\
    type var;                                          \\
    std::memcpy(static_cast<void *>(&var), (const void *)(tiling), sizeof(type))
#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT(TWIN_TILING_STRUCT, var, tiling)
"""

# The stand-in for the intrinsics header of CANN's prebuilt CPU-debug library: the hardware enums the
# Ascend C headers name, and every intrinsic they call as a function that accepts anything.
INTRINSIC_ENUMS = {
    "pipe_t": "PIPE_S PIPE_V PIPE_M PIPE_MTE1 PIPE_MTE2 PIPE_MTE3 PIPE_ALL PIPE_MTE4 PIPE_MTE5 PIPE_V2 PIPE_FIX",
    "event_t": " ".join(f"EVENT_ID{i}" for i in range(8)),
    "ub_addr8_t": " ".join(f"VA{i}" for i in range(8)),
    "vpart_t": "L128 H128",
    "addr_cal_mode_t": "inc dec",
}
INTRINSIC_SCOPED_ENUMS = {
    "QuantMode_t": "NoQuant F322F16 F322BF16 DEQF16 VDEQF16 REQ8 VREQ8 QF322B8_PRE VQF322B8_PRE VQF322F16_PRE "
                   "VQF322HIF8_PRE VQS322BF16_PRE",
    "dcci_dst_t": "CACHELINE_ALL CACHELINE_UB CACHELINE_OUT CACHELINE_ATOMIC",
    "cache_line_t": "SINGLE_CACHE_LINE ENTIRE_DATA_CACHE",
    "Order_t": "VALUE_INDEX INDEX_VALUE ONLY_VALUE ONLY_INDEX",
    "pad_t": "PAD_NONE",
    "mem_t": "MEM_NONE",
    "mem_dsb_t": "DSB_NONE",
    "atomic_type_t": "ATOMIC_NONE",
    "atomic_op_t": "ATOMIC_OP_NONE",
}
INTRINSIC_PREFIX_FAMILIES = {  # vconv_<from>2<to><rounding>: every conversion the headers spell out
    "vconv_": "bf162f32 bf162s32a bf162s32c bf162s32f bf162s32r bf162s32z deq f162f32 f162s16a f162s16c f162s16f "
              "f162s16r f162s16z f162s32a f162s32c f162s32f f162s32r f162s32z f162s4 f162s4a f162s4c f162s4f "
              "f162s4r f162s4z f162s8 f162s8a f162s8c f162s8f f162s8r f162s8z f162u8 f162u8a f162u8c f162u8f "
              "f162u8r f162u8z f322bf16a f322bf16c f322bf16f f322bf16r f322bf16z f322f16 f322f16a f322f16c f322f16f "
              "f322f16o f322f16r f322f16z f322f32a f322f32c f322f32f f322f32r f322f32z f322s16a f322s16c f322s16f "
              "f322s16r f322s16z f322s32a f322s32c f322s32f f322s32r f322s32z f322s64a f322s64c f322s64f f322s64r "
              "f322s64z s162f16 s162f16a s162f16c s162f16f s162f16r s162f16z s162f32 s322f32 s322f32a s322f32c "
              "s322f32f s322f32r s322f32z s322s16 s322s64 s42f16 s642f32a s642f32c s642f32f s642f32r s642f32z "
              "s642s32 s82f16 u82f16",
    "vcmpv_": "eq ge gt le lt ne",
    "vcmpvs_": "eq ge gt le lt ne",
    "set_aipp_spr_": " ".join(str(i) for i in (*range(10), 18, 19, 20, 21)),
    "set_atomic_": "add bf16 f16 f32 max min none s16 s32 s8",
    "set_data_exp_": "0 1 2 3",
    "conv_": "f322f16o f322s32a f322s32c f322s32f f322s32r",
}
INTRINSICS = """
AscendCBufAbsAddr AscendCBufAlloc AscendCBufDeque AscendCBufEnque AscendCBufFree AscendCBufGet AscendCBufInit
AscendCQueCreate AscendCRecordPoolHierarchy AscendCTBufPoolInit AscendCTBufPoolResetCheck
AscendCUpdateTbufPoolStatus PingPongReleaseEvent __ib_set_stub __ib_wait_stub __sync_all_stub bcnt0 bcnt1 clz
copy_cbuf_to_bt copy_cbuf_to_fbuf copy_cbuf_to_gm copy_gm_to_cbuf copy_gm_to_cbuf_multi_nd2nz_b16
copy_gm_to_cbuf_multi_nd2nz_b32s copy_gm_to_cbuf_multi_nd2nz_b8 copy_gm_to_ubuf copy_gm_to_ubuf_align_b16
copy_gm_to_ubuf_align_b32 copy_gm_to_ubuf_align_b8 copy_ubuf_to_gm copy_ubuf_to_gm_align_b16
copy_ubuf_to_gm_align_b32 copy_ubuf_to_gm_align_b8 copy_ubuf_to_ubuf
create_cbuf_matrix dc_preload dcci dsb ffts_cross_core_sync get_acc_val get_arch_ver get_block_idx get_block_num
get_ctrl get_icache_prl_st get_max_min_cnt get_pc get_rsvd_cnt get_st_atomic_cfg get_vms4_sr hset_flag hwait_flag
img2colv2_cbuf_to_ca img2colv2_cbuf_to_ca_s4 img2colv2_cbuf_to_cb ld_dev load_cbuf_to_ca_s4 load_cbuf_to_cb_s4
load_cbuf_to_cb_sp load_cbuf_to_cb_transpose_s4 mad_sp pipe_barrier preload sbitset0 sbitset1 scatter_vnchwconv_b16
scatter_vnchwconv_b32 scatter_vnchwconv_b8 set_cmpmask set_ctrl set_deqscale set_ffts_base_addr set_flag
set_fmatrix set_fmatrix_b set_fpc set_l1_3d_size set_l3d_rpt set_mask_count set_mask_norm set_mov_pad_val
set_nd_para set_padding set_quant_pre set_st_atomic_cfg set_va_reg_sb set_vector_mask sff0 sff1 sflbits st_dev trap
vabs vadd vadds vand vaxpy vbitsort vbrcb vcadd vcpadd vcgadd vcgmax vcgmin vcmax vcmin vcopy vdiv vector_dup vexp
vgather vgatherb vld_va_reg vln vmax vmaxs vmin vmins vmla vmrgsort4 vmul vmulconv_f162s8 vmulconv_f162u8 vmuls vnot
vor vrec vreducev2 vsel vshr vsqrt vsub vtranspose wait_flag wait_flag_dev
"""


def intrinsic_names() -> list[str]:
    names = set(INTRINSICS.split())
    for prefix, tails in INTRINSIC_PREFIX_FAMILIES.items():
        names.update(prefix + tail for tail in tails.split())
    return sorted(names)


def intrinsics_standin() -> str:
    lines = ["// Stand-in for the CCE intrinsics header of CANN's prebuilt CPU-debug library, written by",
             "// tests/conformance for a compile-only check: no intrinsic here does anything.",
             "#pragma once", "#include <cstdint>"]
    lines += [f"enum {name} {{ {', '.join(values.split())} }};" for name, values in INTRINSIC_ENUMS.items()]
    lines += [f"enum class {name} {{ {', '.join(values.split())} }};"
              for name, values in INTRINSIC_SCOPED_ENUMS.items()]
    lines += [f"template <typename... Args> inline int64_t {name}(Args &&...) {{ return 0; }}"
              for name in intrinsic_names()]
    return "\n".join(lines) + "\n"


@dataclass
class Headers:
    """Where CANN's headers are and how they were found (`origin`, for messages)."""
    origin: str
    include_dirs: list[Path]
    devkit: Optional[Path] = None  # a source checkout of asc-devkit: its generator fills the gaps


def locate(env: Mapping[str, str] = os.environ) -> Union[Headers, str]:
    """The headers, or the reason they cannot be used (a sentence naming the variables)."""
    home, devkit, tools = (env.get(k) for k in ("ASCEND_HOME_PATH", "ASC_DEVKIT_SRC", "ASC_TOOLS_SRC"))
    if devkit and tools:
        devkit_path, tools_path = Path(devkit), Path(tools)
        for variable, path, probe in (("ASC_DEVKIT_SRC", devkit_path, "include/kernel_operator.h"),
                                      ("ASC_TOOLS_SRC", tools_path, "cpudebug/include/tikicpulib.h")):
            if not (path / probe).is_file():
                return f"{variable}={path} is not a source checkout of its repository (no {probe})"
        dirs = [devkit_path / d for d in DEVKIT_DIRS] + [tools_path / d for d in TOOLS_DIRS]
        return Headers(f"source checkouts ASC_DEVKIT_SRC={devkit_path}, ASC_TOOLS_SRC={tools_path}", dirs, devkit_path)
    if home:
        root = Path(home)
        arch_roots = [root / f"{platform.machine()}-linux", *sorted(root.glob("*-linux")), root]
        dirs = [r / d for r in arch_roots for d in INSTALLED_DIRS] + [root / d for d in INSTALLED_TOOLS_DIRS]
        dirs = list(dict.fromkeys(d for d in dirs if d.is_dir()))
        if not any((d / "kernel_operator.h").is_file() for d in dirs):
            return f"ASCEND_HOME_PATH={root} has no Ascend C include tree (no kernel_operator.h under it)"
        return Headers(f"installed CANN ASCEND_HOME_PATH={root}", dirs)
    return ("CANN's Ascend C headers are not available: set ASCEND_HOME_PATH to an installed CANN, or "
            "ASC_DEVKIT_SRC and ASC_TOOLS_SRC to source checkouts of asc-devkit and asc-tools")


def has_header(headers: Headers, name: str) -> bool:
    return any((d / name).is_file() for d in headers.include_dirs)


@dataclass
class Toolchain:
    """The compile command against `headers`, with the missing pieces written into `scratch`."""
    headers: Headers
    scratch: Path
    standins: list[str] = field(default_factory=list)  # what was filled in, for the report

    def __post_init__(self):
        self.scratch.mkdir(parents=True, exist_ok=True)
        (self.scratch / "conformance_tiling_macros.h").write_text(TILING_MACROS)
        if not has_header(self.headers, "stub_fun.h"):
            (self.scratch / "stub_fun.h").write_text(intrinsics_standin())
            self.standins.append("stub_fun.h (stand-in intrinsics)")
        if not has_header(self.headers, "kernel_tiling/kernel_tiling.h"):
            self._generate_tiling_structs()
        (self.scratch / "conformance_prelude.h").write_text(
            '#include "conformance_tiling_macros.h"\n#include "kernel_operator.h"\n')

    def _generate_tiling_structs(self):
        script = self.headers.devkit / TILING_SCRIPT if self.headers.devkit else None
        if script is None or not script.is_file():
            raise RuntimeError(f"{self.headers.origin}: kernel_tiling/kernel_tiling.h is missing and so is the "
                               f"generator script {TILING_SCRIPT} that writes it")
        target = self.scratch / "kernel_tiling" / "kernel_tiling.h"
        done = subprocess.run([sys.executable, str(script), str(self.headers.devkit / "include" / "adv_api"),
                               str(target)], capture_output=True, text=True)
        if done.returncode != 0 or not target.is_file():
            raise RuntimeError(f"{script} failed: {done.stderr.strip()[-2000:]}")
        self.standins.append(f"kernel_tiling/kernel_tiling.h (generated by the checkout's {TILING_SCRIPT})")

    def flags(self, defines: Sequence[str] = (), include_dirs: Sequence[Path] = ()) -> list[str]:
        dirs = [*include_dirs, self.scratch, *self.headers.include_dirs]
        return (["-std=c++17", "-fmax-errors=0"] + [f"-D{d}" for d in (*CPU_DEBUG_DEFINES, *defines)]
                + [f"-I{d}" for d in dirs])

    def precompile(self) -> bool:
        """Precompiles the prelude: parsing CANN's headers is most of each compile's time. g++ uses the
        .gch beside the prelude wherever the flags allow and parses the headers itself elsewhere."""
        header = self.scratch / "conformance_prelude.h"
        done = subprocess.run([CXX, *self.flags(), "-x", "c++-header", str(header), "-o", f"{header}.gch"],
                              capture_output=True, text=True)
        return done.returncode == 0

    def compile(self, source: Path, mode: str, defines: Sequence[str] = (),
                include_dirs: Sequence[Path] = ()) -> "CompileResult":
        output = ["-o", os.devnull] if mode == "object" else []
        command = [CXX, MODES[mode], *self.flags(defines, include_dirs), "-include", "conformance_prelude.h",
                   str(source), *output]
        done = subprocess.run(command, capture_output=True, text=True)
        return CompileResult(done.returncode, done.stderr)


ERROR = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<message>.*)$")
CONTEXT = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:\d+:)?\s+required from")


@dataclass
class CompileResult:
    returncode: int
    stderr: str

    def errors(self, own: Sequence[Path]) -> list[tuple[str, str]]:
        """(file, message) per error. An error inside CANN's headers is charged to the last line of
        the project's own files that led there ("required from here"), when there is one."""
        roots = [str(Path(p).resolve()) for p in own]
        found, context = [], None
        for line in self.stderr.splitlines():
            m = CONTEXT.match(line)
            if m and _inside(m["file"], roots):
                context = f"{m['file']}:{m['line']}"
            m = ERROR.match(line)
            if m:
                where = f"{m['file']}:{m['line']}"
                found.append((where if _inside(m["file"], roots) or context is None else context, m["message"]))
                context = None
        if self.returncode != 0 and not found:
            found.append(("<compiler>", self.stderr.strip()[-500:] or f"exit status {self.returncode}"))
        return found


def _inside(file: str, roots: Sequence[str]) -> bool:
    path = str(Path(file).resolve())
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def per_file(errors: Sequence[tuple[str, str]]) -> Counter:
    return Counter(where.rsplit(":", 1)[0] for where, _ in errors)
