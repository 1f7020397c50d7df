# SPDX-License-Identifier: BSD-3-Clause
"""The NPU (PrivateUse1) kernel of the operator: the C++ adapter in framework/torch_npu_adapter.

The adapter is a separate extension module (rmsnorm_backward_npu_adapter) built only where torch_npu
and CANN are installed; it calls aclnnRmsNormBackward of the installed custom operator package
through torch_npu's OpCommand. The kernel registered here imports it on first use, so the order in
which a user imports torch_npu and rmsnorm_backward.torch does not matter, and this module never
imports torch_npu itself (without CANN, importing it ends the process).

The autocast rule (functional.AUTOCAST_RULE) is registered for the NPU only when torch_npu was
imported before this package: the rule casts the tensors of the backend's device type by name, and
the PrivateUse1 backend is named "npu" only once torch_npu has loaded.
"""
from __future__ import annotations

import functools
import importlib

import torch

from .. import attrs
from ..npu_adapter import NPU_ADAPTER
from ..errors import EnvironmentSetupError
from . import _validate
from ._op import rms_norm_backward
from .functional import AUTOCAST_RULE, rms_norm_forward

ADAPTER = NPU_ADAPTER
BUILD_HINT = ("build it where torch_npu and CANN are installed with "
              "`pip install --no-build-isolation framework/torch_npu_adapter` "
              "(docs/npu_build.md, 'The torch_npu adapter')")


@functools.lru_cache(maxsize=None)
def adapter():
    """The compiled adapter module; EnvironmentSetupError saying how to build it when it is missing."""
    try:
        return importlib.import_module(ADAPTER)
    except ImportError as e:
        raise EnvironmentSetupError(f"NPU tensors need the {ADAPTER} extension, which is not importable ({e}): "
                                f"{BUILD_HINT}") from None


@rms_norm_backward.register_kernel(torch._C._get_privateuse1_backend_name())
def _npu_kernel(dy, x, rstd, gamma=None, dres=None, gamma_offset=attrs.GAMMA_OFFSET):
    _validate.check_devices(dy=dy, x=x, rstd=rstd, gamma=gamma, dres=dres)
    _validate.check(dy, x, rstd, gamma, gamma_offset, dres)
    return adapter().rms_norm_backward(dy, x, rstd, gamma, dres, gamma_offset)


BACKEND = torch._C._get_privateuse1_backend_name()
if BACKEND != "privateuseone":  # renamed: a backend such as torch_npu is loaded
    for _op in (rms_norm_forward, rms_norm_backward):
        torch.library.register_autocast(_op, BACKEND, AUTOCAST_RULE)
