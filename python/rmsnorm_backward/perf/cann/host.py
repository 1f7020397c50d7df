# SPDX-License-Identifier: BSD-3-Clause
"""CANN's own tiling on the host: an ops-nn operator's tiling sources (RmsNormGrad by default; any of
sources.OPS), compiled from the fetched checkout with the public metadef/opbase/asc-devkit sources
they call and the stand-ins of benchmarks/cann/ for what is not public, into one small shared library
per operator, loaded with ctypes.

    plan = host.tiling([(shape, dtype), ...inputs], [(shape, dtype), ...outputs], deterministic=False, soc="Ascend910B2")
    plan = host.tiling(inputs, outputs, op_type="RmsNorm", attrs=(1e-6,))   # attrs: the IR's float attributes
    plan.tiling_key, plan.block_dim, plan.data, plan.workspace_bytes

The library is built once per content (the sources compiled, the stand-ins, the SoC table, the
compiler) under the twin's cache directory, and written by rename, so parallel workers never load
half of one. Building takes about half a minute on two cores, announced at INFO.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from rmsnorm_backward import resources
from rmsnorm_backward.errors import EnvironmentSetupError, InvalidInputError
from rmsnorm_backward.twin import cache_dir, compiler_version, twin_include_dirs

from . import sources

CXX = "g++"
FLAGS = ("-std=c++17", "-O1", "-fPIC", "-w")
_log = logging.getLogger(__name__)

# The public sources the tiling calls, per checkout (relative paths), beside ops-nn's tiling sources.
PUBLIC_SOURCES = {
    "metadef": ("base/registry/op_impl_registry.cc", "base/runtime/compute_node_info.cc",
                "base/type/ascend_string_impl.cc", "base/asc/tilingdata_base_impl.cc", "base/any_value.cc",
                "base/utils/type_utils_impl.cc", "base/runtime/runtime_attrs.cc"),
    "opbase": ("src/op_common/log/log.cpp",),
    "asc_devkit": ("impl/utils/tiling/platform/platform_ascendc.cpp",),
}
# Include directories per checkout, in search order, as their CMake interface targets list them.
INCLUDE_DIRS = {
    "ops_nn": ("common/inc", "common/inc/op_host"),
    "opbase": ("include", "include/op_common", "include/op_common/op_host", "pkg_inc"),
    "metadef": ("inc/external", "inc/external/asc", "inc", "pkg_inc", ""),
    "ge": ("inc/graph_metadef/external", "inc/graph_metadef"),
    "asc_devkit": ("include/utils", "include/utils/tiling", "include/utils/tiling/platform", "include/adv_api",
                   "include"),
}
OWN_SOURCES = ("cann_platform.cpp", "cann_tiling.cpp")
TILING_SCRIPT = "impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py"
MAX_DIMS = 8
# What CANN's log line puts before the message: [file:line][module][function][thread] OpName:[type]
_LOG_PREFIX = re.compile(r"(\[[^\]]*\]){3}\[\d+\] (OpName:\[[^\]]*\] )?")
WORKSPACES = 8


class CannTensor(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_DIMS), ("dtype", ctypes.c_char_p)]


class CannTilingRequest(ctypes.Structure):
    _fields_ = [("op_type", ctypes.c_char_p), ("soc", ctypes.c_char_p), ("num_inputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(CannTensor)), ("num_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(CannTensor)), ("deterministic", ctypes.c_int32),
                ("num_attrs", ctypes.c_int32), ("attrs", ctypes.POINTER(ctypes.c_float))]


class CannTilingResult(ctypes.Structure):
    _fields_ = [("tiling_key", ctypes.c_uint64), ("block_dim", ctypes.c_uint32), ("schedule_mode", ctypes.c_uint32),
                ("tiling_size", ctypes.c_uint64), ("tiling", ctypes.c_uint8 * 16384),
                ("workspace_count", ctypes.c_uint64), ("workspace", ctypes.c_uint64 * WORKSPACES),
                ("error", ctypes.c_char * 4096)]


def standins() -> Path:
    """Our stand-ins for what CANN does not publish (benchmarks/cann/)."""
    return resources.path("benchmarks/cann")


def _compile_units(checkouts: sources.Checkouts, op_type: str) -> list[Path]:
    units = [checkouts.ops_nn / s for s in sources.OPS[op_type].tiling_sources]
    for field, relatives in PUBLIC_SOURCES.items():
        units += [getattr(checkouts, field) / r for r in relatives]
    return units + [standins() / s for s in OWN_SOURCES]


def _digest(checkouts: sources.Checkouts, units: list[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(compiler_version().encode())
    digest.update(" ".join(FLAGS).encode())
    platform_h = twin_include_dirs()[0] / "twin" / "platform.h"
    for path in [*units, platform_h, *sorted((standins() / "include").rglob("*.h"))]:
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    for field in sources.VARIABLES:
        digest.update(str(getattr(checkouts, field)).encode() + b"\0")
    return digest.hexdigest()[:24]


def _scratch_includes(checkouts: sources.Checkouts, scratch: Path) -> Path:
    """A directory of what the checkouts lack at the paths the sources include them by: links to
    asc-devkit's tiling_api.h (installed as tiling/tiling_api.h) and to the project's SoC table
    (twin/platform.h alone: the twin's own tiling/ headers must not shadow asc-devkit's), and the
    tiling-structs header asc-devkit's build generates, written by its own script."""
    out = scratch / "include"
    (out / "tiling").mkdir(parents=True)
    (out / "twin").mkdir()
    (out / "kernel_tiling").mkdir()
    (out / "tiling" / "tiling_api.h").symlink_to(checkouts.asc_devkit / "include" / "adv_api" / "tiling_api.h")
    (out / "twin" / "platform.h").symlink_to(twin_include_dirs()[0] / "twin" / "platform.h")
    done = subprocess.run([sys.executable, str(checkouts.asc_devkit / TILING_SCRIPT),
                           str(checkouts.asc_devkit / "include" / "adv_api"), str(out / "kernel_tiling" / "kernel_tiling.h")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise EnvironmentSetupError(f"asc-devkit's {TILING_SCRIPT} failed: {done.stderr.strip()[-1000:]}")
    return out


def _include_flags(checkouts: sources.Checkouts, scratch_include: Path) -> list[str]:
    dirs = [standins() / "include", scratch_include]
    for field in ("ops_nn", "opbase", "metadef", "ge", "asc_devkit"):
        dirs += [getattr(checkouts, field) / d for d in INCLUDE_DIRS[field]]
    return [f"-I{d}" for d in dirs]


def _build(checkouts: sources.Checkouts, target: Path, op_type: str) -> None:
    units = _compile_units(checkouts, op_type)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tmp-", dir=target.parent))
    try:
        flags = [*FLAGS, *_include_flags(checkouts, _scratch_includes(checkouts, work))]

        def compile_one(index_unit):
            index, unit = index_unit
            obj = work / f"{index:02d}-{unit.stem}.o"
            done = subprocess.run([CXX, *flags, "-c", str(unit), "-o", str(obj)], capture_output=True, text=True)
            if done.returncode != 0:
                raise EnvironmentSetupError(f"compiling {unit} for CANN's host tiling failed:\n{done.stderr[-3000:]}")
            return obj

        _log.info("building CANN's %s tiling from %s (about half a minute, once)", op_type, checkouts.ops_nn)
        with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
            objects = list(pool.map(compile_one, enumerate(units)))
        library = work / target.name
        done = subprocess.run([CXX, "-shared", "-Wl,-z,defs", "-o", str(library), *map(str, objects)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise EnvironmentSetupError(f"linking CANN's host tiling failed:\n{done.stderr[-3000:]}")
        os.replace(library, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@lru_cache(maxsize=None)
def library(op_type: str = sources.OP_TYPE) -> ctypes.CDLL:
    """The host library of `op_type`, built on first use (EnvironmentSetupError without the checkouts)."""
    if op_type not in sources.OPS:
        raise InvalidInputError(f"op_type must be one of {', '.join(sources.OPS)}, got {op_type!r}")
    checkouts = sources.locate(op_type=op_type)
    units = _compile_units(checkouts, op_type)
    target = cache_dir().parent / "cann_host" / f"libcann_host-{op_type}-{_digest(checkouts, units)}.so"
    if not target.is_file():
        _build(checkouts, target, op_type)
    lib = ctypes.CDLL(str(target))
    lib.CannTiling.argtypes = [ctypes.POINTER(CannTilingRequest), ctypes.POINTER(CannTilingResult)]
    lib.CannTiling.restype = ctypes.c_int32
    lib.CannTilingFields.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64]
    lib.CannTilingFields.restype = ctypes.c_int32
    return lib


@dataclass(frozen=True)
class Plan:
    tiling_key: int
    block_dim: int
    schedule_mode: int
    data: bytes
    workspace_bytes: int


def _tensor(shape: Sequence[int], dtype: str) -> CannTensor:
    if len(shape) > MAX_DIMS:
        raise InvalidInputError(f"CANN's tiling takes at most {MAX_DIMS} dims, got a shape of {len(shape)}")
    t = CannTensor()
    t.rank = len(shape)
    for i, d in enumerate(shape):
        t.dims[i] = int(d)
    t.dtype = dtype.encode()
    return t


def tiling(inputs: Sequence[tuple], outputs: Sequence[tuple], *, deterministic: bool = False,
           soc: str = "Ascend910B2", op_type: str = sources.OP_TYPE, attrs: Sequence[float] = ()) -> Plan:
    """CANN's tiling of `op_type` for these (shape, numpy dtype name) inputs and outputs and its float
    attributes in IR order; a tiling that fails (a shape it refuses) raises InvalidInputError with
    CANN's own logged reason."""
    ins = (CannTensor * len(inputs))(*(_tensor(s, d) for s, d in inputs))
    outs = (CannTensor * len(outputs))(*(_tensor(s, d) for s, d in outputs))
    values = (ctypes.c_float * max(len(attrs), 1))(*attrs)
    request = CannTilingRequest(op_type.encode(), soc.encode(), len(inputs), ins, len(outputs), outs, int(deterministic),
                                len(attrs), values)
    result = CannTilingResult()
    if library(op_type).CannTiling(ctypes.byref(request), ctypes.byref(result)) != 0:
        raise InvalidInputError(_LOG_PREFIX.sub("", result.error.decode(errors="replace")).strip())
    return Plan(result.tiling_key, result.block_dim, result.schedule_mode,
                bytes(result.tiling[: result.tiling_size]), sum(result.workspace[: result.workspace_count]))


def tiling_fields(op_type: str = sources.OP_TYPE) -> tuple[str, list[tuple[str, str, int]]]:
    """The tiling struct `op_type` registers: its class name and (name, C type, array length or 0)."""
    out = ctypes.create_string_buffer(1 << 16)
    if library(op_type).CannTilingFields(op_type.encode(), out, len(out)) != 0:
        raise EnvironmentSetupError(out.value.decode(errors="replace"))
    name, *lines = out.value.decode().splitlines()
    return name, [(f, t, int(n)) for f, t, n in (line.split() for line in lines)]
