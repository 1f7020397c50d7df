# SPDX-License-Identifier: BSD-3-Clause
"""The include tree of the torch_npu wheel that matches the installed torch, for compile checks only.

torch_npu is never installed (without CANN, importing it ends the process): its wheel is fetched with
`pip download --no-deps` once into the kernel cache folder and only include/ is unpacked, into a
temporary sibling renamed at the end, so an interrupted run leaves nothing half-made. Downloads are
retried, since CI runners see transient index errors.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch

ATTEMPTS = 3


def torch_version() -> str:
    return torch.__version__.split("+")[0]


def cache_root() -> Path:
    return Path(os.environ.get("RMSNORM_BACKWARD_CACHE") or Path.home() / ".cache" / "rmsnorm_backward")


def _download(version: str, dest: Path) -> Path:
    errors = []
    for attempt in range(ATTEMPTS):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--disable-pip-version-check", "-q", "-d", str(dest), f"torch_npu=={version}"],
                              capture_output=True, text=True, timeout=900)
        wheels = sorted(dest.glob(f"torch_npu-{version}-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        errors.append((proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1])
        time.sleep(2 ** attempt)
    raise RuntimeError(f"pip download --no-deps torch_npu=={version} failed {ATTEMPTS} times: {errors[-1]}")


def include_dir() -> Path:
    """torch_npu/include of the torch_npu wheel for the installed torch version (cached)."""
    version = torch_version()
    final = cache_root() / "torch_npu" / version
    include = final / "torch_npu" / "include"
    if include.is_dir():
        return include
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{version}."))
    try:
        wheel = _download(version, work / "wheel")
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(work / "tree", [n for n in zf.namelist() if n.startswith("torch_npu/include/")])
        try:
            (work / "tree").rename(final)
        except OSError:  # another run got there first
            if not include.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return include
