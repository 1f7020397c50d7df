# SPDX-License-Identifier: BSD-3-Clause
"""Where the files the package reads at run time live: the one locator.

The package reads op_def (the operator's interface), the kernel sources and headers (op_kernel/,
op_host/) and CANN's default install paths (cmake/cann_default_paths.txt); the twin's own files are
the twin's (the ascendc-twin distribution), the code generator's templates package data. A wheel ships them inside the package, under `rmsnorm_backward/data/`
in the repository's own layout; a source checkout (an editable install, or the package on
PYTHONPATH) uses the checkout itself, so an edited kernel or template counts without a reinstall.
Both are found from the package's location as importlib.resources reports it, nowhere else.

    from rmsnorm_backward import resources
    resources.path("op_kernel/rms_norm_backward.cpp")
"""
from __future__ import annotations

import importlib
import importlib.resources
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Optional

from .errors import EnvironmentSetupError

# A file only a source checkout has next to python/rmsnorm_backward: its presence marks one.
_CHECKOUT_MARK = "op_def/rms_norm_backward.toml"
DATA_DIR = "data"  # the wheel's copy of the tree, inside the package


@lru_cache(maxsize=None)
def package_dir() -> Path:
    """The directory of the imported rmsnorm_backward package's sources. An editable install's
    resources span two directories (the sources and the built extension); __init__.py names the
    first. A wheel is never zipped: the extension and the headers g++ reads must be real files."""
    init = importlib.resources.files("rmsnorm_backward").joinpath("__init__.py")
    if not isinstance(init, Path):
        raise EnvironmentSetupError(f"rmsnorm_backward must be installed as files on disk, not inside {init}")
    return init.resolve().parent


@lru_cache(maxsize=None)
def checkout() -> Optional[Path]:
    """The source checkout the package is imported from, or None for an installed wheel."""
    package = package_dir()
    root = package.parent.parent
    if package == root / "python" / "rmsnorm_backward" and (root / _CHECKOUT_MARK).is_file():
        return root
    return None


def root() -> Path:
    """The tree holding op_def/, op_kernel/, op_host/ and cmake/: the checkout, else the wheel's data
    directory."""
    return checkout() or package_dir() / DATA_DIR


def path(relative: str) -> Path:
    """The file or directory `relative` (in the repository's layout, e.g. "op_kernel"), which must
    exist. A missing one is a broken install, not the caller's input: EnvironmentSetupError names it and
    where it was looked for."""
    found = root() / relative
    if not found.exists():
        where = "the source checkout" if checkout() else "the installed package's data"
        raise EnvironmentSetupError(f"{relative} is missing from {where} ({found}); reinstall rmsnorm-backward")
    return found


def extension() -> ModuleType:
    """The compiled extension rmsnorm_backward._tiling (the tiling of op_host/tiling and its rules).
    Missing or unloadable, it is this install's fault: EnvironmentSetupError saying how to build it."""
    try:
        return importlib.import_module("rmsnorm_backward._tiling")
    except ImportError as e:
        raise EnvironmentSetupError(f"the compiled extension rmsnorm_backward._tiling is not importable ({e}); "
                                    "run ./build.sh setup in a checkout, or reinstall rmsnorm-backward") from e
