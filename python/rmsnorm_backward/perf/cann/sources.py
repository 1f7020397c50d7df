# SPDX-License-Identifier: BSD-3-Clause
"""Where CANN's public sources are: the fetched checkouts of ops-nn, metadef, ge, opbase and
asc-devkit, named by environment variables (`source /work/src/env.sh` sets them). Nothing of them is
in this repository; they are read at build and test time only. Without them, `missing()` says which
variable is unset or names no directory, and everything CANN-side is skipped with that sentence.

    checkouts = sources.locate()      # Checkouts, or EnvironmentSetupError with the reason
    sources.ops_nn_identity()         # what bench records: commit, version, hash of the op's files
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from rmsnorm_backward.errors import EnvironmentSetupError

VARIABLES = {"ops_nn": "OPS_NN_SRC", "metadef": "METADEF_SRC", "ge": "GE_SRC", "opbase": "OPBASE_SRC",
             "asc_devkit": "ASC_DEVKIT_SRC"}


@dataclass(frozen=True)
class Op:
    """One ops-nn operator run here: its registered type, directory, host tiling sources (every file the
    tiling function calls into, the arch35 ones included: they are linked, never run on the A2 SoCs)
    and kernel entry, paths relative to the ops-nn checkout."""
    op_type: str
    op_dir: str
    tiling_sources: tuple
    kernel_source: str
    kernel_entry: str


def _op(op_type: str, op_dir: str, tiling: tuple, entry: str) -> Op:
    return Op(op_type, op_dir, tuple(f"{op_dir}/op_host/{s}" for s in tiling), f"{op_dir}/op_kernel/{entry}.cpp", entry)


OPS = {op.op_type: op for op in (
    _op("RmsNormGrad", "norm/rms_norm_grad", ("rms_norm_grad_tiling.cpp", "rms_norm_grad_empty_tiling.cpp"),
        "rms_norm_grad"),
    _op("RmsNorm", "norm/rms_norm", ("rms_norm_tiling.cpp", "rms_norm_tiling_arch35.cpp"), "rms_norm"),
    _op("AddRmsNorm", "norm/add_rms_norm", ("add_rms_norm_tiling.cpp", "add_rms_norm_tiling_arch35.cpp"),
        "add_rms_norm"),
)}
# The operator bench anchors on: its directory, host tiling and kernel entry.
OP_TYPE = "RmsNormGrad"
OP_DIR = OPS[OP_TYPE].op_dir
TILING_SOURCES = OPS[OP_TYPE].tiling_sources
KERNEL_SOURCE = OPS[OP_TYPE].kernel_source
KERNEL_ENTRY = OPS[OP_TYPE].kernel_entry


@dataclass(frozen=True)
class Checkouts:
    ops_nn: Path
    metadef: Path
    ge: Path
    opbase: Path
    asc_devkit: Path


def missing(env: Mapping[str, str] = os.environ, op_type: str = OP_TYPE) -> Optional[str]:
    """Why CANN's kernel `op_type` cannot run here (one sentence), or None when every checkout is found."""
    for field, variable in VARIABLES.items():
        value = env.get(variable)
        if not value:
            return f"{variable} is not set: CANN's {op_type} needs the fetched public sources (source /work/src/env.sh)"
        if not Path(value).is_dir():
            return f"{variable}={value} is not a directory: CANN's {op_type} needs the fetched public sources there"
    ops_nn = Path(env[VARIABLES["ops_nn"]])
    op = OPS[op_type]
    for relative in (*op.tiling_sources, op.kernel_source):
        if not (ops_nn / relative).is_file():
            return f"{VARIABLES['ops_nn']}={ops_nn} has no {relative}: is it an ops-nn checkout?"
    return None


def locate(env: Mapping[str, str] = os.environ, op_type: str = OP_TYPE) -> Checkouts:
    """The checkouts, or EnvironmentSetupError with missing()'s sentence."""
    reason = missing(env, op_type)
    if reason:
        raise EnvironmentSetupError(reason)
    return Checkouts(**{field: Path(env[variable]).resolve() for field, variable in VARIABLES.items()})


def _git_commit(root: Path) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else None


@lru_cache(maxsize=None)
def _identity(root: Path) -> dict:
    version = re.search(r'set_cann_package\(\s*ops-nn\s+VERSION\s+"([^"]+)"', (root / "version.cmake").read_text()) \
        if (root / "version.cmake").is_file() else None
    digest = hashlib.sha256()
    op_dir = root / OP_DIR
    for path in sorted(p for p in op_dir.rglob("*") if p.is_file() and "tests" not in p.relative_to(op_dir).parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return {"path": str(root), "commit": _git_commit(root), "version": version.group(1) if version else None,
            "op_sha256": digest.hexdigest()}


def ops_nn_identity(env: Mapping[str, str] = os.environ) -> dict:
    """What the ops-nn checkout is: its git commit (None for an extracted snapshot without .git), its
    version (version.cmake) and a sha256 of every file of norm/rms_norm_grad outside tests/, so a
    bench report says exactly which CANN kernel and tiling it ran."""
    return _identity(locate(env).ops_nn)
