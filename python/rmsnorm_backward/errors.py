# SPDX-License-Identifier: BSD-3-Clause
"""The exceptions of rmsnorm_backward, by cause; each message is one sentence naming what is wrong.

    InvalidInputError      the caller's input (a tensor, an attribute, an option) breaks a documented rule
    TilingError            the tiling refuses the inputs: an InvalidInputError that also says the
                           rule's kind ("dtype", "shape", ...) and the tensor it names
    EnvironmentSetupError  this machine lacks something (CANN, the NPU adapter, g++, the extension)
    KernelCompileError     the kernel source did not compile for the CPU twin
    KernelRuleError        the kernel broke an Ascend C rule while running on the CPU twin
    KernelTimeoutError     the kernel did not finish within its time
    KernelCrashError       the kernel died of a fatal signal (its launch process did, not the caller)

All derive from RmsNormBackwardError, so one `except` catches what the operator raises on purpose.
The operator owns these classes: the NPU path needs nothing else, and where the CPU twin raises one
of its own errors, the twin backend (rmsnorm_backward.twin) raises the matching one of these instead.
"""
from __future__ import annotations

__all__ = ["RmsNormBackwardError", "InvalidInputError", "TilingError", "EnvironmentSetupError", "KernelCompileError",
           "KernelRuleError", "KernelTimeoutError", "KernelCrashError"]


class RmsNormBackwardError(Exception):
    """Base of the operator's own errors."""


class InvalidInputError(RmsNormBackwardError, ValueError):
    """An input the caller passed breaks a documented rule (a tensor, an attribute, an option)."""


class TilingError(InvalidInputError):
    """The tiling's rules refuse the inputs. kind: what the rule is about ("dtype", "shape", "attr",
    "platform", "output"); tensor: the tensor or attribute it names ("" when none)."""

    def __init__(self, message: str, kind: str = "", tensor: str = ""):
        super().__init__(message)
        self.kind = kind
        self.tensor = tensor


class EnvironmentSetupError(RmsNormBackwardError, RuntimeError):
    """Something this machine lacks or has broken (CANN, g++, an extension, the kernel cache): not
    the caller's input."""


class KernelCompileError(RmsNormBackwardError, RuntimeError):
    """The kernel source did not compile for the CPU twin; the message carries the compiler's output."""


class KernelRuleError(RmsNormBackwardError, RuntimeError):
    """The kernel broke an Ascend C rule while running on the CPU twin: `core <i>: <Call>: <rule>`."""


class KernelTimeoutError(RmsNormBackwardError, TimeoutError):
    """A kernel launch did not finish within its timeout; its cores were stopped."""


class KernelCrashError(RmsNormBackwardError, RuntimeError):
    """The kernel died of a fatal signal (a null or wild pointer, abort()) on the twin.

    signal: the signal number (None when the launch process exited instead); core: the block index
    of the core that took it, None when not known."""

    def __init__(self, message: str, signal: int | None = None, core: int | None = None):
        super().__init__(message)
        self.signal = signal
        self.core = core
