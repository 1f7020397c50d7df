"""The exceptions of rmsnorm_backward, by cause; each message is one sentence naming what is wrong.

    InvalidInputError      the caller's input (a tensor, an option) breaks a documented rule
    TilingError            the tiling refuses the inputs: an InvalidInputError that also says the
                           rule's kind ("dtype", "shape", ...) and the tensor it names
    EnvironmentSetupError  this machine lacks something (CANN, the NPU adapter, g++, the extension)
    KernelCompileError     g++ could not compile a kernel source against the twin
    TwinRuleError          a kernel broke an Ascend C rule on the twin
    TwinTimeoutError       a kernel did not finish within run_kernel's timeout
    KernelCrashError       a kernel died of a fatal signal (its launch process did, not the caller)

The causes are those of the CPU twin the kernel runs on (ascendc_twin.errors): one hierarchy, so an
`except InvalidInputError` catches a bad tensor found by the operator and a bad launch argument
found by the twin alike, and `except TwinError` everything either raises on purpose.
"""
from __future__ import annotations

from ascendc_twin.errors import (EnvironmentSetupError, InvalidInputError, KernelCompileError, KernelCrashError,
                                 TwinError, TwinRuleError, TwinTimeoutError)

__all__ = ["TwinError", "InvalidInputError", "TilingError", "EnvironmentSetupError", "KernelCompileError",
           "TwinRuleError", "TwinTimeoutError", "KernelCrashError"]


class TilingError(InvalidInputError):
    """The tiling's rules refuse the inputs. kind: what the rule is about ("dtype", "shape", "attr",
    "platform", "output"); tensor: the tensor or attribute it names ("" when none)."""

    def __init__(self, message: str, kind: str = "", tensor: str = ""):
        super().__init__(message)
        self.kind = kind
        self.tensor = tensor
