# SPDX-License-Identifier: BSD-3-Clause
"""Where the files the twin reads at run time live: its headers (include/) and the demo kernel (demo/).

A wheel ships them inside the package under `ascendc_twin/data/`, in the layout of the twin's source
directory; a source checkout (an editable install, or the package on PYTHONPATH) reads the checkout
itself, so an edited header counts without a reinstall. Both are found from the package's location,
nowhere else.

    from ascendc_twin import resources
    resources.path("demo/scaled_sum.cpp")
"""
from __future__ import annotations

import importlib
import importlib.resources
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Optional

from .errors import EnvironmentSetupError

# A file only the twin's source directory has two levels above python/ascendc_twin: its presence marks one.
_CHECKOUT_MARK = "include/kernel_operator.h"
DATA_DIR = "data"  # the wheel's copy of the twin's files, inside the package


@lru_cache(maxsize=None)
def package_dir() -> Path:
    """The directory of the imported ascendc_twin package's sources. A wheel is never zipped: the
    extension and the headers g++ reads must be real files."""
    init = importlib.resources.files("ascendc_twin").joinpath("__init__.py")
    if not isinstance(init, Path):
        raise EnvironmentSetupError(f"ascendc_twin must be installed as files on disk, not inside {init}")
    return init.resolve().parent


@lru_cache(maxsize=None)
def checkout() -> Optional[Path]:
    """The twin's source directory the package is imported from, or None for an installed wheel."""
    package = package_dir()
    root = package.parent.parent
    if package == root / "python" / "ascendc_twin" and (root / _CHECKOUT_MARK).is_file():
        return root
    return None


def root() -> Path:
    """The directory holding include/ and demo/: the checkout's twin/, else the wheel's data directory."""
    return checkout() or package_dir() / DATA_DIR


def path(relative: str) -> Path:
    """The file or directory `relative` (e.g. "include"), which must exist. A missing one is a broken
    install, not the caller's input: EnvironmentSetupError names it and where it was looked for."""
    found = root() / relative
    if not found.exists():
        where = "the twin's source directory" if checkout() else "the installed package's data"
        raise EnvironmentSetupError(f"{relative} is missing from {where} ({found}); reinstall ascendc-twin")
    return found


def extension() -> ModuleType:
    """The compiled extension ascendc_twin._twin (the SoC table, the model table, the kernel loader).
    Missing or unloadable, it is this install's fault: EnvironmentSetupError saying how to build it."""
    try:
        return importlib.import_module("ascendc_twin._twin")
    except ImportError as e:
        raise EnvironmentSetupError(f"the compiled extension ascendc_twin._twin is not importable ({e}); "
                                    "reinstall ascendc-twin (pip install <its source directory>)") from e
