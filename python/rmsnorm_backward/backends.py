# SPDX-License-Identifier: BSD-3-Clause
"""Where the operator can run here: the CPU twin (always, given g++ and the extension) or the NPU
(only with CANN, torch_npu, a visible device and the built adapter).

torch_npu is never imported in this process before it is known to work: without CANN its import
ends the process. It is probed in a subprocess.
"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from . import attrs, resources
from .errors import EnvironmentSetupError, InvalidInputError
from .npu_adapter import NPU_ADAPTER

# CANN's default install locations (shared with build.sh and cmake/npu.cmake).
CANN_DEFAULT_PATHS = tuple(
    line.strip() for line in resources.path("cmake/cann_default_paths.txt").read_text().splitlines()
    if line.strip() and not line.lstrip().startswith("#"))

_NPU_PROBE = f"""
import importlib.util, json
import torch, torch_npu
n = torch.npu.device_count() if torch.npu.is_available() else 0
print(json.dumps({{"torch_npu": torch_npu.__version__, "devices": n,
                  "soc": torch.npu.get_device_name(0) if n else None,
                  "adapter": importlib.util.find_spec("{NPU_ADAPTER}") is not None}}))
"""


@dataclass(frozen=True)
class Backend:
    name: str
    usable: bool
    detail: str       # what was found, or what is missing
    next_step: str    # what to do about it ("" when usable)

    def to_dict(self) -> dict:
        return asdict(self)


def cann_candidates() -> list[str]:
    env = os.environ.get("ASCEND_HOME_PATH")
    return ([env] if env else []) + list(CANN_DEFAULT_PATHS)


def find_cann() -> dict:
    """{'path', 'version', 'looked', 'env_problem'}: path None when no candidate holds a CANN toolkit;
    env_problem the sentence saying why ASCEND_HOME_PATH, when it is set, names no CANN toolkit (None
    when it is unset or does): the defaults are still looked in, but whoever set it meant that one."""
    looked = cann_candidates()
    env = os.environ.get("ASCEND_HOME_PATH")
    problem = None if not env or _is_cann(Path(env)) else _not_cann(Path(env))
    for cand in looked:
        root = Path(cand)
        if _is_cann(root):
            return {"path": str(root), "version": _cann_version(root), "looked": looked, "env_problem": problem}
    return {"path": None, "version": None, "looked": looked, "env_problem": problem}


def _is_cann(root: Path) -> bool:
    return (root / "include" / "acl" / "acl.h").is_file() or (root / "compiler").is_dir()


def _not_cann(root: Path) -> str:
    what = ("does not exist" if not root.exists() else "is not a directory" if not root.is_dir()
            else "holds no CANN toolkit (neither include/acl/acl.h nor compiler/)")
    return f"ASCEND_HOME_PATH is {root}, which {what}; point it at CANN's install (source its set_env.sh) or unset it"


def _cann_version(root: Path) -> str | None:
    for info in [*root.glob("*/ascend_toolkit_install.info"), root / "compiler" / "version.info",
                 root / "version.cfg"]:
        if info.is_file():
            for line in info.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip().lower() == "version" and value.strip():
                    return value.strip()
    return None


@lru_cache(maxsize=None)
def probe_npu(timeout: float = 120.0) -> dict:
    """torch_npu probed in a subprocess: {'ok', 'error'} plus the probe's fields when ok."""
    try:
        proc = subprocess.run([sys.executable, "-c", _NPU_PROBE], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"importing torch_npu did not finish within {timeout:g} s"}
    if proc.returncode != 0 or not proc.stdout.strip():
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return {"ok": False, "error": lines[-1] if lines else f"exit status {proc.returncode}"}
    return {"ok": True, "error": None, **json.loads(proc.stdout.strip().splitlines()[-1])}


def twin_backend() -> Backend:
    try:
        from .twin import CXX, soc_table  # CXX: the compiler the twin runs (always this one: it never reads $CXX)

        if shutil.which(CXX) is None:
            return Backend("twin", False, f"no {CXX} on PATH (the twin compiles kernels with {CXX})",
                           f"install {CXX} (apt-get install g++)")
        socs = ", ".join(row["name"] for row in soc_table())
        resources.extension()
        importlib.import_module("rmsnorm_backward.simulate")
    except (ImportError, EnvironmentSetupError) as e:
        return Backend("twin", False, f"the twin is not importable ({e})",
                       "run ./build.sh setup (the editable install builds the twin's extension and the tiling's)")
    return Backend("twin", True, f"CPU twin of the Ascend C API (SoCs {socs})", "")


def npu_backend(cann: dict | None = None) -> Backend:
    cann = cann or find_cann()
    if cann["path"] is None:
        return Backend("npu", False, f"CANN not found (looked in {', '.join(cann['looked'])})",
                       "install the CANN toolkit and source its set_env.sh (sets ASCEND_HOME_PATH)")
    npu = probe_npu()
    if not npu["ok"]:
        return Backend("npu", False, f"torch_npu does not import: {npu['error']}",
                       "install the torch_npu matching torch and CANN")
    if not npu["devices"]:
        return Backend("npu", False, "torch_npu imports but sees no NPU", "run on a machine with an Ascend NPU (npu-smi info)")
    if not npu["adapter"]:
        return Backend("npu", False, f"the {NPU_ADAPTER} extension is not built",
                       "pip install --no-build-isolation framework/torch_npu_adapter, then install the .run package")
    return Backend("npu", True, f"{npu['devices']} NPU(s), {npu['soc']}, torch_npu {npu['torch_npu']}", "")


def best() -> Backend:
    """The NPU when usable, else the twin; EnvironmentSetupError when neither is."""
    twin = twin_backend()
    for backend in (npu_backend(), twin):
        if backend.usable:
            return backend
    raise EnvironmentSetupError(f"no backend is usable here ({twin.detail}); run `rmsnorm-backward doctor`")


def run(name: str, dy, x, rstd, gamma, dres=None, *, soc: str, gamma_offset: float = attrs.GAMMA_OFFSET):
    """(dx, dgamma, details) from backend `name` ('twin' or 'npu')."""
    if name == "twin":
        from .simulate import simulate

        dx, dgamma, stats = simulate(dy, x, rstd, gamma, dres, gamma_offset=gamma_offset, soc=soc)
        return dx, dgamma, {k: stats[k] for k in ("block_dim", "tiling_key", "path", "gm_read_bytes", "gm_write_bytes")}
    if name == "npu":
        return _run_npu(dy, x, rstd, gamma, dres, gamma_offset)
    raise InvalidInputError(f"backend must be 'twin' or 'npu', got {name!r}")


def _run_npu(dy, x, rstd, gamma, dres, gamma_offset):
    # Reached only after probe_npu() succeeded, so importing torch_npu here is safe.
    import torch
    import torch_npu  # noqa: F401

    from .torch import rms_norm_backward
    from .torch._bridge import from_numpy, to_numpy

    dev = [None if a is None else from_numpy(a).to("npu") for a in (dy, x, rstd, gamma, dres)]
    dx, dgamma = rms_norm_backward(*dev, gamma_offset=gamma_offset)
    torch.npu.synchronize()
    return to_numpy(dx.cpu()), to_numpy(dgamma.cpu()), {"device": torch.npu.get_device_name(0)}
