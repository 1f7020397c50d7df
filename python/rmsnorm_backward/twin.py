# SPDX-License-Identifier: BSD-3-Clause
"""The operator's one door to the CPU twin of the Ascend C API (the ascendc-twin distribution).

Every module of the operator that runs a kernel or reads the twin's SoC and model tables imports them
from here, never from ascendc_twin: what the twin raises on purpose crosses this door as the
operator's own error (rmsnorm_backward.errors), so a caller catches one hierarchy whichever layer
found the fault, and the NPU path, which never comes here, needs no twin at all.

    run_kernel, compile_kernel, soc_table, soc_info, load_model, model_constants, Model, CXX
"""
from __future__ import annotations

import contextlib
import functools

import ascendc_twin
from ascendc_twin import errors as twin_errors

from . import errors

Model = ascendc_twin.Model
CXX = ascendc_twin.CXX  # the compiler the twin runs kernels' compiles with (it never reads $CXX)

# Each twin error and the operator's error it becomes (the first that matches).
_TRANSLATED = (
    (twin_errors.InvalidInputError, errors.InvalidInputError),
    (twin_errors.EnvironmentSetupError, errors.EnvironmentSetupError),
    (twin_errors.KernelCompileError, errors.KernelCompileError),
    (twin_errors.TwinRuleError, errors.KernelRuleError),
    (twin_errors.TwinTimeoutError, errors.KernelTimeoutError),
)


def translate(error: twin_errors.TwinError) -> errors.RmsNormBackwardError:
    """The operator's error for one the twin raised, with its message (and a crash's signal and core)."""
    if isinstance(error, twin_errors.KernelCrashError):
        return errors.KernelCrashError(str(error), error.signal, error.core)
    for twin_class, ours in _TRANSLATED:
        if isinstance(error, twin_class):
            return ours(str(error))
    return errors.RmsNormBackwardError(str(error))


@contextlib.contextmanager
def translated():
    """Within the block, an error the twin raises on purpose is raised as the operator's own."""
    try:
        yield
    except twin_errors.TwinError as e:
        raise translate(e) from e


def _door(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        with translated():
            return function(*args, **kwargs)

    return call


run_kernel = _door(ascendc_twin.run_kernel)
compile_kernel = _door(ascendc_twin.compile_kernel)
soc_table = _door(ascendc_twin.soc_table)
soc_info = _door(ascendc_twin.soc_info)
load_model = _door(ascendc_twin.load_model)


@contextlib.contextmanager
def model_constants(overrides):
    """ascendc_twin.model_constants: within the block, every launch uses these model constants; a
    bad name or value is the operator's InvalidInputError, raised on entry."""
    block = ascendc_twin.model_constants(overrides)
    with translated():
        block.__enter__()
    try:
        yield
    finally:
        block.__exit__(None, None, None)
