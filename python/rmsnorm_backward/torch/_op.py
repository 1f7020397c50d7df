# SPDX-License-Identifier: BSD-3-Clause
"""torch.ops.rmsnorm_backward.rms_norm_backward(dy, x, rstd, gamma=None, dres=None, gamma_offset=0.0)
-> (dx, dgamma).

The schema's names, and its attributes with their defaults, come from op_def (the operator's one
definition). Implementations:
  CPU     the kernel run on the CPU twin (rmsnorm_backward.simulate);
  fake    shapes and dtypes only, for torch.compile and meta tensors, checked by the same C++ rules
          the tiling applies (rmsnorm_backward._tiling.compute_tiling);
  NPU     aclnnRmsNormBackward, registered by the C++ adapter in framework/torch_npu_adapter when it
          is built and torch_npu is loaded (see _npu.py).
Outputs are dense row-major: dx shaped like x in x's dtype, dgamma shaped like gamma in float32
(gamma=None: the scale is 1 and dgamma is empty, shape (0,)). dres, the residual stream's gradient
of a fused add + RMSNorm, is added to dx (see add_rms_norm in functional.py).
"""
from __future__ import annotations

import torch

from .. import attrs, op_def
from . import _bridge, _validate

_OP = op_def.load()
NAMESPACE = "rmsnorm_backward"
NAME = f"{NAMESPACE}::{_OP.file}"
SCHEMA = "({}) -> ({})".format(
    ", ".join([f"Tensor? {t.name}=None" if t.optional else f"Tensor {t.name}" for t in _OP.inputs]
              + [f"{a.spelling('torch')} {a.name}={a.default!r}" for a in _OP.attrs]),
    ", ".join(f"Tensor {t.name}" for t in _OP.outputs),
)


@torch.library.custom_op(NAME, mutates_args=(), device_types="cpu", schema=SCHEMA)
def rms_norm_backward(dy, x, rstd, gamma=None, dres=None, gamma_offset=attrs.GAMMA_OFFSET):
    """(dx, dgamma) of RMSNorm, scaled by gamma + gamma_offset, by the RmsNormBackward kernel on the CPU
    twin. The schema types gamma_offset (a float), and the tiling holds its value rules: the kernel is
    launched without checking it again in Python (simulate.launch)."""
    from ..simulate import launch

    _validate.check_devices(dy=dy, x=x, rstd=rstd, gamma=gamma, dres=dres)
    # Views, not copies: the launch checks the shapes (once) before it densifies anything.
    arrays = (None if t is None else _bridge.as_numpy(t) for t in (dy, x, rstd, gamma, dres))
    dx, dgamma, _stats = launch(*arrays, gamma_offset=float(gamma_offset))
    return _bridge.from_numpy(dx), _bridge.from_numpy(dgamma)


@rms_norm_backward.register_fake
def _fake(dy, x, rstd, gamma=None, dres=None, gamma_offset=attrs.GAMMA_OFFSET):
    _validate.check_devices(dy=dy, x=x, rstd=rstd, gamma=gamma, dres=dres)
    _validate.check(dy, x, rstd, gamma, gamma_offset, dres)
    return x.new_empty(x.shape), x.new_empty((0,) if gamma is None else gamma.shape, dtype=torch.float32)
