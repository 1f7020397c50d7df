# SPDX-License-Identifier: BSD-3-Clause
"""The exceptions of ascendc_twin, by cause; each message is one sentence naming what is wrong.

    InvalidInputError      an argument of run_kernel, gm_empty, soc_info, ... breaks a documented rule
    EnvironmentSetupError  this machine lacks something (g++, the extension, a usable kernel cache)
    KernelCompileError     g++ could not compile a kernel source against the twin
    TwinRuleError          a kernel broke an Ascend C rule on the twin
    TwinTimeoutError       a kernel did not finish within run_kernel's timeout
    KernelCrashError       a kernel died of a fatal signal (its launch process did, not the caller)

All derive from TwinError, so one `except` catches what the twin raises on purpose.
"""
from __future__ import annotations


class TwinError(Exception):
    """Base of the twin's own errors."""


class InvalidInputError(TwinError, ValueError):
    """An argument the caller passed breaks a documented rule (a GM array, block_dim, a SoC name, ...)."""


class EnvironmentSetupError(TwinError, RuntimeError):
    """Something this machine lacks or has broken (g++, the extension, the kernel cache, a kernel
    object that does not load): not the caller's input, and no kernel's fault."""


class KernelCompileError(TwinError, RuntimeError):
    """g++ could not compile a kernel source against the twin; the message carries its output."""


class TwinRuleError(TwinError, RuntimeError):
    """A kernel broke an Ascend C rule while running on the CPU twin: `core <i>: <Call>: <rule>`."""


class TwinTimeoutError(TwinError, TimeoutError):
    """A kernel launch did not finish within its timeout; its cores were stopped."""


class KernelCrashError(TwinError, RuntimeError):
    """A kernel died of a fatal signal (a null or wild pointer, abort()) on the twin.

    signal: the signal number (None when the launch process exited instead); core: the block index
    of the core that took it, None when not known (e.g. a stack overflow leaves no room to ask)."""

    def __init__(self, message: str, signal: int | None = None, core: int | None = None):
        super().__init__(message)
        self.signal = signal
        self.core = core
