# SPDX-License-Identifier: BSD-3-Clause
"""The float64 reference of RmsNormBackward (docs/design.md section 1).

With cols = gamma.size, rows = x.size / cols, every tensor viewed as [rows, cols] (rstd as [rows]):

    xh     = x * rstd                           (rstd broadcast along the row)
    g      = dy * (gamma + gamma_offset)        (broadcast across rows; the offset is a float32)
    dx     = rstd * (g - xh * mean(g * xh))     (mean over the cols of one row)
    dgamma = sum over rows of dy * xh
    dx    += dres                               (the fused add-RMSNorm backward, when dres is given)

Everything is computed in float64 from the inputs as given (16-bit inputs are exact in float64);
rounding to the device dtype is the comparison's business (precision.compare). rows = 0 gives an empty
dx and an all-zero dgamma. NaN and Inf propagate as IEEE arithmetic does.
"""
from __future__ import annotations

import math

import numpy as np

from . import attrs, host_memory
from .errors import InvalidInputError


def row_layout(dy, x, rstd, gamma) -> tuple[int, int]:
    """(rows, cols) of a valid input set; InvalidInputError naming the tensor and rule otherwise."""
    k = gamma.ndim
    if not 1 <= k < x.ndim:
        raise InvalidInputError(
            f"gamma must have at least 1 and fewer dims than x (gamma has {k}, x has {x.ndim})")
    if tuple(x.shape[-k:]) != tuple(gamma.shape):
        raise InvalidInputError(
            f"gamma's shape {tuple(gamma.shape)} must equal the last {k} dims of x {tuple(x.shape)}")
    if tuple(dy.shape) != tuple(x.shape):
        raise InvalidInputError(f"dy's shape {tuple(dy.shape)} must equal x's shape {tuple(x.shape)}")
    lead = tuple(x.shape[:-k])
    if tuple(rstd.shape) not in (lead + (1,) * k, lead):
        raise InvalidInputError(
            f"rstd's shape {tuple(rstd.shape)} must be {lead + (1,) * k} or {lead} (one value per row of x)")
    return math.prod(lead), math.prod(gamma.shape)


def _row_without_gamma(x_shape, rstd_shape) -> tuple[int, ...]:
    """Without gamma the row is x's trailing dims that rstd does not have (the smallest such k)."""
    x_shape, rstd_shape = tuple(x_shape), tuple(rstd_shape)
    for k in range(1, len(x_shape)):
        if rstd_shape in (x_shape[:-k], x_shape[:-k] + (1,) * k):
            return x_shape[-k:]
    raise InvalidInputError(f"rstd's shape {rstd_shape} must be x.shape[:-k] + (1,)*k or x.shape[:-k] for some "
                            f"1 <= k < x.ndim (x {x_shape}): without gamma it gives the row")


def golden(dy, x, rstd, gamma, gamma_offset: float = attrs.GAMMA_OFFSET, dres=None):
    """(dx, dgamma) in float64, dx shaped like x and dgamma like gamma (without gamma, None: the scale
    is 1 and dgamma is empty, shape (0,)); with dres, dx is dres + the RMSNorm gradient (the fused
    add-RMSNorm backward); see the module docstring."""
    checked = attrs.check({"gamma_offset": gamma_offset}, has_gamma=gamma is not None)
    return _golden(dy, x, rstd, gamma, checked["gamma_offset"], dres)


def _golden(dy, x, rstd, gamma, gamma_offset: float, dres):
    dy, x, rstd = (np.asarray(a) for a in (dy, x, rstd))
    if dres is not None:
        dres = np.asarray(dres)
        if dres.shape != x.shape:
            raise InvalidInputError(f"dres's shape {tuple(dres.shape)} must equal x's shape {tuple(x.shape)}")
        dx, dgamma = _golden(dy, x, rstd, gamma, gamma_offset, None)
        with np.errstate(all="ignore"):
            return dx + dres.astype(np.float64), dgamma
    if gamma is None:
        dx, _ = _golden(dy, x, rstd, np.ones(_row_without_gamma(x.shape, rstd.shape)), gamma_offset, None)
        return dx, np.zeros((0,))
    gamma = np.asarray(gamma)
    rows, cols = row_layout(dy, x, rstd, gamma)
    host_memory.require_host_memory(host_memory.golden_bytes({"x": x.shape}), f"golden on x {list(x.shape)}")
    dy64 = dy.astype(np.float64).reshape(rows, cols)
    x64 = x.astype(np.float64).reshape(rows, cols)
    rstd64 = rstd.astype(np.float64).reshape(rows, 1)
    offset = float(np.float32(gamma_offset))  # the float32 the kernel adds
    gamma64 = gamma.astype(np.float64).reshape(1, cols) + offset

    with np.errstate(all="ignore"):  # NaN/Inf inputs are legitimate and must propagate
        xh = x64 * rstd64
        g = dy64 * gamma64
        mean_gxh = (g * xh).mean(axis=1, keepdims=True) if cols else np.zeros((rows, 1))
        dx = rstd64 * (g - xh * mean_gxh)
        dgamma = (dy64 * xh).sum(axis=0)
    return dx.reshape(x.shape), dgamma.reshape(gamma.shape)


def forward(x, gamma, epsilon: float):
    """The float64 RMSNorm forward this operator differentiates: (y, rstd) with rstd = 1 / sqrt(mean(x^2)
    + epsilon) over gamma's dims (kept as size-1 dims) and y = x * rstd * gamma, shaped like x."""
    x64 = np.asarray(x, dtype=np.float64)
    g64 = np.asarray(gamma, dtype=np.float64)
    if g64.ndim < 1 or g64.ndim > x64.ndim or x64.shape[x64.ndim - g64.ndim:] != g64.shape:
        raise InvalidInputError(f"gamma's shape {list(g64.shape)} must be the last dims of x's {list(x64.shape)}")
    axes = tuple(range(x64.ndim - g64.ndim, x64.ndim))
    rstd = 1.0 / np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=True) + float(epsilon))
    return x64 * rstd * g64, rstd
