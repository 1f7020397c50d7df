"""RmsNormBackward: an Ascend C custom operator with a CPU twin of the Ascend C API.

Re-exported lazily (importing the package needs neither torch nor the compiled extension):
golden, compare, simulate, run_kernel; rms_norm and RMSNorm need torch (rmsnorm_backward.torch).
"""
import importlib
import sys
import types

_EXPORTS = {
    "golden": "rmsnorm_backward.golden",
    "compare": "rmsnorm_backward.precision",
    "simulate": "rmsnorm_backward.simulate",
    "run_kernel": "ascendc_twin",
    "rms_norm": "rmsnorm_backward.torch",
    "RMSNorm": "rmsnorm_backward.torch",
}
__all__ = sorted(_EXPORTS)


class _Package(types.ModuleType):
    # golden and simulate are functions named like their modules: importing the submodule would
    # make the import system overwrite the package attribute with the module; keep the function.
    def __setattr__(self, name, value):
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __getattr__(self, name):
        if name not in _EXPORTS:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        super().__setattr__(name, value)
        return value


sys.modules[__name__].__class__ = _Package
