"""The exceptions of rmsnorm_backward, by cause; each message is one sentence naming what is wrong.

    InvalidInputError      the caller's input (a tensor, an option) breaks a documented rule
    EnvironmentSetupError  this machine lacks something (CANN, the NPU adapter, g++, the extension)
    KernelCompileError     g++ could not compile a kernel source against the twin
    TwinRuleError          a kernel broke an Ascend C rule on the twin
    TwinTimeoutError       a kernel did not finish within run_kernel's timeout
    KernelCrashError       a kernel died of a fatal signal (its launch process did, not the caller)

All derive from RmsNormBackwardError, so one `except` catches what this package raises on purpose.
"""
from __future__ import annotations


class RmsNormBackwardError(Exception):
    """Base of the package's own errors."""


class InvalidInputError(RmsNormBackwardError, ValueError):
    """A tensor or option the caller passed breaks a documented rule (shape, dtype, SoC, size, ...)."""


class EnvironmentSetupError(RmsNormBackwardError, RuntimeError):
    """Something this machine lacks or has broken (CANN, torch_npu, the adapter, g++, the extension,
    a kernel object that does not load): not the caller's input, and no kernel's fault."""


class KernelCompileError(RmsNormBackwardError, RuntimeError):
    """g++ could not compile a kernel source against the twin; the message carries its output."""


class TwinRuleError(RmsNormBackwardError, RuntimeError):
    """A kernel broke an Ascend C rule while running on the CPU twin: `core <i>: <Call>: <rule>`."""


class TwinTimeoutError(RmsNormBackwardError, TimeoutError):
    """A kernel launch did not finish within its timeout; its cores were stopped."""


class KernelCrashError(RmsNormBackwardError, RuntimeError):
    """A kernel died of a fatal signal (a null or wild pointer, abort()) on the twin.

    signal: the signal number (None when the launch process exited instead); core: the block index
    of the core that took it, None when not known (e.g. a stack overflow leaves no room to ask)."""

    def __init__(self, message: str, signal: int | None = None, core: int | None = None):
        super().__init__(message)
        self.signal = signal
        self.core = core
