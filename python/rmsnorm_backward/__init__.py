# SPDX-License-Identifier: BSD-3-Clause
"""RmsNormBackward: an Ascend C custom operator, run here on the CPU twin of the Ascend C API (ascendc_twin).

Its parts are modules, each imported by name: rmsnorm_backward.golden (golden, the float64 reference),
rmsnorm_backward.simulate (simulate, the kernel on the twin), rmsnorm_backward.precision,
rmsnorm_backward.torch (needs torch), rmsnorm_backward.cli. Re-exported lazily, since no module
has their names (importing the package needs neither torch nor a compiled extension): compare,
rms_norm and RMSNorm (these two need torch).
"""
import importlib

_EXPORTS = {
    "compare": "rmsnorm_backward.precision",
    "rms_norm": "rmsnorm_backward.torch",
    "RMSNorm": "rmsnorm_backward.torch",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
