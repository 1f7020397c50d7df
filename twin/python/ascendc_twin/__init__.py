# SPDX-License-Identifier: BSD-3-Clause
"""Run any Ascend C kernel source on the CPU twin.

    stats = run_kernel("my_kernel.cpp", "my_kernel", [x, y, z], block_dim=8)

compiles the source against the twin (cached by content, see build.py), runs its
`extern "C" __global__ __aicore__` entry `name` on `block_dim` simulated AI cores with the NumPy
arrays as its GM_ADDR arguments in order, and writes every array back in place. A broken Ascend C
rule raises TwinRuleError; a compile error KernelCompileError with g++'s message.

The launch runs in a launch process forked from the caller (src/launch_process.h), so it can
always be stopped and never takes the caller down: past `timeout` seconds it is stopped with
TwinTimeoutError, Ctrl-C stops it with KeyboardInterrupt, and a kernel that dies of a fatal signal
(a null GM_ADDR written, abort()) raises KernelCrashError with the signal and, where known, the core.

Any array is copied into a guarded GM buffer and back around the launch; arrays made by gm_empty /
gm_array live in guarded GM memory already (like device memory) and run without those copies.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union

import numpy as np

from . import resources
from .build import CXX, Defines, cache_dir, compile_kernel, twin_include_dirs, twin_runtime_source
from .errors import (EnvironmentSetupError, InvalidInputError, KernelCompileError, KernelCrashError, TwinError,
                     TwinRuleError, TwinTimeoutError)

# Generous: the slowest launch of the test suites takes seconds; a kernel that loops forever does not.
DEFAULT_TIMEOUT = 600.0

# The public API (README.md): what a caller may use; every other name is the twin's own.
__all__ = ["LaunchStats", "run_kernel", "compile_kernel", "soc_info", "soc_table", "gm_empty", "gm_array", "model_constants",
           "add_launch_check", "Model", "load_model", "twin_include_dirs", "twin_runtime_source", "cache_dir", "CXX",
           "TwinError", "InvalidInputError", "EnvironmentSetupError", "KernelCompileError", "TwinRuleError",
           "TwinTimeoutError", "KernelCrashError"]


@dataclass(frozen=True)
class LaunchStats:
    """Counters of one launch: per core (names of twin::Counters) and over the cores: summed, except
    ub_peak_bytes, the largest of the cores' peaks."""
    block_dim: int
    cores: list = field(repr=False)
    total: dict = field(default_factory=dict)


def soc_table() -> list[dict]:
    """The twin's platform table (include/twin/platform.h): one dict of facts per supported SoC."""
    return resources.extension().soc_table()


def soc_info(soc: str) -> dict:
    """The row of the twin's platform table (include/twin/platform.h) for `soc`; InvalidInputError if it is not supported."""
    table = soc_table()
    for row in table:
        if row["name"] == soc:
            return row
    names = ", ".join(row["name"] for row in table)
    raise InvalidInputError(f"soc must be one of the supported SoCs ({names}), got {soc!r}")


def gm_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array in the twin's guarded GM memory. A launch that fails
    leaves in it whatever the kernel wrote before it stopped (a copied array is left untouched)."""
    _twin = resources.extension()

    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise InvalidInputError(f"dtype must be a numeric dtype for GM memory, got {dtype}")
    count = int(np.prod(shape, dtype=np.int64))
    return _twin.gm_empty(count * dtype.itemsize).view(dtype).reshape(shape)


def gm_array(values) -> np.ndarray:
    """A copy of `values` in the twin's guarded GM memory."""
    values = np.asarray(values)
    out = gm_empty(values.shape, values.dtype)
    out[...] = values
    return out


def _gm_arguments(args) -> tuple[list, list[str]]:
    if isinstance(args, Mapping):
        names, values = [str(k) for k in args], list(args.values())
    elif isinstance(args, (list, tuple)):
        names, values = [f"args[{i}]" for i in range(len(args))], list(args)
    else:
        raise InvalidInputError("args must be a list of NumPy arrays or a dict of name -> array, "
                                f"got {type(args).__name__}")
    for name, value in zip(names, values):
        if value is None:
            continue
        if not isinstance(value, np.ndarray) or value.dtype.hasobject:
            raise InvalidInputError(f"GM argument {name} must be a NumPy array of numbers (or None), "
                                    f"got {type(value).__name__}")
        if not (value.flags.c_contiguous and value.flags.writeable):
            raise InvalidInputError(f"GM argument {name} must be C-contiguous and writeable, "
                                    "because the kernel's writes are copied back into it")
    return values, names


_MODEL_OVERRIDES: contextvars.ContextVar[Optional[Mapping[str, float]]] = contextvars.ContextVar(
    "model_overrides", default=None)


@contextlib.contextmanager
def model_constants(overrides: Mapping[str, float]):
    """Within the block, every run_kernel that names no model of its own launches with these
    performance model constants (by name, model_sources()) in place of the SoC's: how a sensitivity
    study reruns several kernels under the same changed constants."""
    _model_values("Ascend910B2", overrides)  # a bad name or value fails here, before any launch
    token = _MODEL_OVERRIDES.set(dict(overrides))
    try:
        yield
    finally:
        _MODEL_OVERRIDES.reset(token)


def _model_values(soc: str, model: Optional[Mapping[str, float]]) -> list[float]:
    """Every model constant in the extension's order, the SoC's own where `model` names none."""
    if not model:
        return []
    _twin = resources.extension()
    (row,) = [r for r in _twin.model_table() if r["soc"] == soc]
    unknown = sorted(set(model) - set(_twin.model_sources()))
    if unknown:
        raise InvalidInputError(f"model constants must be among {', '.join(_twin.model_sources())}, "
                                f"got {', '.join(unknown)}")
    values = [float(model.get(name, row[name])) for name in _twin.model_sources()]
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise InvalidInputError(f"model constants must be finite and non-negative, got {dict(model)!r}")
    return values


LaunchCheck = Callable[[str, object], Callable[[], None]]
_LAUNCH_CHECKS: list[LaunchCheck] = []


def add_launch_check(check: LaunchCheck) -> Callable[[], None]:
    """Runs check(name, args) before every launch, with the entry's name and run_kernel's args; the
    callable it returns runs after every launch that succeeded, and may raise to fail it (a test
    harness checking, e.g., that a kernel left its inputs alone). Returns the function that removes it."""
    _LAUNCH_CHECKS.append(check)
    return lambda: _LAUNCH_CHECKS.remove(check)


def _check_defined(values, names, undefined) -> None:
    for value, name, first in zip(values, names, undefined):
        if first is not None:
            index = first // value.itemsize
            element = tuple(int(i) for i in np.unravel_index(index, value.shape)) if value.ndim > 1 else index
            raise TwinRuleError(f"GM buffer {name} holds undefined data after the launch: element {element} "
                                f"(byte offset {first}) was copied from UB bytes that nothing wrote")


def run_kernel(source: Union[str, os.PathLike], name: str, args, *, block_dim: int = 1,
               soc: str = "Ascend910B2", tiling_key: int = 0, defines: Defines = None,
               include_dirs: Optional[Iterable[Union[str, os.PathLike]]] = None,
               seed: Optional[int] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
               model: Optional[Mapping[str, float]] = None, auto_sync: bool = False,
               allow_undefined: bool = False, optimize: bool = True) -> LaunchStats:
    """Compile `source` against the twin and launch its entry `name` on `block_dim` cores.

    args: NumPy arrays (or None for a null GM_ADDR), in the entry's argument order, as a list or a
    dict whose keys name the buffers in error messages. defines: {"NAME": value} or ["NAME=value"].
    seed: randomises what the hardware leaves unordered (atomic adds); random when None.
    timeout: seconds the launch may take (None: no limit), not counting the compile.
    model: performance model constants by name (model_sources()) replacing the SoC's own for this
    launch (None: those of an enclosing model_constants block, if any); the results and counters
    do not depend on them, only the modelled cycles.
    auto_sync: model bisheng's --cce-auto-sync, where the compiler inserts the SetFlag/WaitFlag pairs
    between the scalar pipe and V / MTE2 / MTE3; off by default, so a kernel states its syncs itself
    (RULES.md).
    allow_undefined: accept GM buffers left holding bytes copied from UB that nothing wrote (the NPU
    copies whatever the UB held; the twin's UB holds 0xFF there). By default that is a TwinRuleError
    naming the buffer and its first undefined element: an operator's outputs must be fully defined.
    optimize: compile at -O2 (True) or -O0 (False: quicker to build, slower to run; the results are
    the same), for small kernels run once.
    """
    cores = soc_info(soc)["vector_cores"]
    if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or not 1 <= block_dim <= cores:
        raise InvalidInputError(f"block_dim must be an integer from 1 to {cores} (the vector cores of {soc}), "
                                f"got {block_dim!r}")
    if isinstance(tiling_key, bool) or not isinstance(tiling_key, (int, np.integer)) or not 0 <= tiling_key < 2**64:
        raise InvalidInputError(f"tiling_key must be a non-negative 64-bit integer, got {tiling_key!r}")
    if not isinstance(auto_sync, (bool, np.bool_)):
        raise InvalidInputError(f"auto_sync must be True or False, got {auto_sync!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating))
                                or not 0 < timeout < float("inf")):
        raise InvalidInputError(f"timeout must be a positive number of seconds or None (no limit), got {timeout!r}")
    values, names = _gm_arguments(args)
    so_path = compile_kernel(source, name, defines=defines, include_dirs=include_dirs, optimize=optimize)
    after_launch = [check(name, args) for check in _LAUNCH_CHECKS]

    _twin = resources.extension()

    seed = secrets.randbits(64) if seed is None else int(seed) % 2**64
    out = _twin.launch(str(so_path), values, names, soc, int(block_dim), int(tiling_key), seed,
                       0.0 if timeout is None else float(timeout),
                       _model_values(soc, _MODEL_OVERRIDES.get() if model is None else model), bool(auto_sync))
    if not allow_undefined:
        _check_defined(values, names, out["undefined"])
    for check in after_launch:
        check()
    counter_names = out["counter_names"]
    per_core = [dict(zip(counter_names, row)) for row in out["cores"]]
    total = {k: (max if k == "ub_peak_bytes" else sum)(core[k] for core in per_core) for k in counter_names}
    return LaunchStats(block_dim=int(block_dim), cores=per_core, total=total)


from .model import Model, load_model  # noqa: E402  (model.py reads soc_info, defined above)
