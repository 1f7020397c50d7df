# SPDX-License-Identifier: BSD-3-Clause
"""CANN's own forward norms on the twin: ops-nn's RmsNorm and AddRmsNorm A2 kernels
(norm/rms_norm/op_kernel/rms_norm.cpp, norm/add_rms_norm/op_kernel/add_rms_norm.cpp, unchanged)
with ops-nn's own host tiling for each shape (host.py, the operator's tiling sources compiled from
the checkout), launched as perf.cann.run launches RmsNormGrad: the tiling struct generated from the
one the host registers, bisheng's automatic syncs (neither kernel directory turns AUTO_SYNC off),
outputs and workspace poisoned first.

    y, rstd, stats = forward.rms_norm(x, gamma, epsilon=1e-6)
    y, rstd, x_sum, stats = forward.add_rms_norm(x1, x2, gamma, epsilon=1e-6)

x (x1, x2) and gamma of one dtype (float16, float32 or bfloat16), gamma the shape of x's last dims
(RmsNorm also takes a float32 gamma beside a 16-bit x: the mixed form its op definition registers);
rstd float32 with x's leading dims and a 1 for each of gamma's. stats: block_dim, tiling_key, the
tiling's fields and the twin's counter sums (total).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.twin import run_kernel

from . import KERNEL_TYPES, fields, host, kernel_include_dirs, kernel_source, poisoned, sources


def _check(arrays: dict, gamma: np.ndarray, epsilon: float, float_gamma: bool = False) -> tuple:
    for name, a in {**arrays, "gamma": gamma}.items():
        if not isinstance(a, np.ndarray):
            raise InvalidInputError(f"{name} must be a NumPy array, got {type(a).__name__}")
    first = next(iter(arrays.values()))
    if first.dtype.name not in KERNEL_TYPES:
        raise InvalidInputError(f"x must be one of {', '.join(KERNEL_TYPES)} for CANN's forward norms, got {first.dtype.name}")
    mixed = float_gamma and first.itemsize == 2 and gamma.dtype == np.float32
    if any(a.shape != first.shape or a.dtype != first.dtype for a in arrays.values()) or \
            (gamma.dtype != first.dtype and not mixed):
        raise InvalidInputError("the inputs must share one shape and dtype, and gamma must have their dtype"
                                + (" (or be float32 beside a 16-bit x)" if float_gamma else ""))
    if gamma.ndim < 1 or gamma.ndim > first.ndim or first.shape[first.ndim - gamma.ndim:] != gamma.shape:
        raise InvalidInputError(f"gamma's shape {list(gamma.shape)} must be the last dims of x's {list(first.shape)}")
    if not np.isfinite(epsilon) or epsilon < 0:
        raise InvalidInputError(f"epsilon must be a finite number of at least 0, got {epsilon!r}")
    return first.shape, first.dtype.name, first.shape[:first.ndim - gamma.ndim] + (1,) * gamma.ndim


def _launch(op_type: str, inputs: dict, outputs: dict, epsilon: float, soc: str, seed: Optional[int], defines: dict):
    """Tiles `op_type` with ops-nn's host for these arrays, launches its kernel on the twin (inputs then
    outputs then workspace and tiling, the entry's order) and returns the outputs and stats."""
    plan = host.tiling([(a.shape, a.dtype.name) for a in inputs.values()],
                       [(a.shape, a.dtype.name) for a in outputs.values()], soc=soc, op_type=op_type, attrs=(epsilon,))
    op = sources.OPS[op_type]
    name, _ = host.tiling_fields(op_type)
    # Outputs are named <name>_out in the launch (its error messages): rstd and x are outputs here,
    # where RmsNormGrad reads tensors of those names.
    args = {**{k: np.ascontiguousarray(v) for k, v in inputs.items()}, **{f"{k}_out": v for k, v in outputs.items()},
            "workspace": poisoned((plan.workspace_bytes,), np.uint8),
            "tiling": np.frombuffer(plan.data, dtype=np.uint8).copy()}
    launch = run_kernel(kernel_source(op_type), op.kernel_entry, args, block_dim=plan.block_dim, soc=soc,
                        tiling_key=plan.tiling_key, seed=seed, auto_sync=True,
                        defines={**defines, "TWIN_TILING_STRUCT": name},
                        include_dirs=kernel_include_dirs(op_type))
    stats = {"block_dim": launch.block_dim, "tiling_key": plan.tiling_key, "tiling": fields(plan, op_type),
             "total": launch.total}
    return outputs, stats


def rms_norm(x, gamma, *, epsilon: float = 1e-6, soc: str = "Ascend910B2", seed: Optional[int] = None):
    """ops-nn's RmsNorm on the twin: (y, rstd float32, stats)."""
    shape, dtype, rstd_shape = _check({"x": x}, gamma, epsilon, float_gamma=True)
    outputs = {"y": poisoned(shape, x.dtype), "rstd": poisoned(rstd_shape, np.float32)}
    out, stats = _launch("RmsNorm", {"x": x, "gamma": gamma}, outputs, epsilon, soc, seed,
                         {"DTYPE_X": KERNEL_TYPES[dtype], "DTYPE_GAMMA": KERNEL_TYPES[gamma.dtype.name]})
    return out["y"], out["rstd"], stats


def add_rms_norm(x1, x2, gamma, *, epsilon: float = 1e-6, soc: str = "Ascend910B2", seed: Optional[int] = None):
    """ops-nn's AddRmsNorm on the twin: (y, rstd float32, x = x1 + x2, stats)."""
    shape, dtype, rstd_shape = _check({"x1": x1, "x2": x2}, gamma, epsilon)
    outputs = {"y": poisoned(shape, x1.dtype), "rstd": poisoned(rstd_shape, np.float32), "x": poisoned(shape, x1.dtype)}
    out, stats = _launch("AddRmsNorm", {"x1": x1, "x2": x2, "gamma": gamma}, outputs, epsilon, soc, seed, {})
    return out["y"], out["rstd"], out["x"], stats
