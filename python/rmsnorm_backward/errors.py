"""The exceptions of rmsnorm_backward: each message is one sentence naming what is wrong."""


class InvalidInputError(ValueError):
    """A tensor or option the caller passed breaks a documented rule (shape, dtype, SoC, ...)."""


class TwinRuleError(RuntimeError):
    """A kernel broke an Ascend C rule while running on the CPU twin: `core <i>: <Call>: <rule>`."""


class KernelCompileError(RuntimeError):
    """g++ could not compile a kernel source against the twin; the message carries its output."""
