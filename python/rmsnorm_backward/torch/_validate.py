# SPDX-License-Identifier: BSD-3-Clause
"""Input checks of the torch front end, by the rules of the C++ tiling (one source of the rules).

Shapes, dtypes and the attributes' values go to rmsnorm_backward.host_tiling.tiling, the binding of
the plain tiling the CANN TilingFunc also runs, on shapes only (no tensor is read or densified); the
front end checks the attributes' types and rules once per call (attrs.check, gamma_offset_checked). Under torch.compile sizes may be symbolic: a size with a hint (the value of
the example input) is checked at that value; when some size has none, the shape check waits for the
kernel, which runs the same rules on real shapes.
"""
from __future__ import annotations

import numbers

import torch

from .. import attrs, host_tiling, op_def
from ..errors import InvalidInputError

NAMES = host_tiling.NAMES  # dy, x, rstd, gamma, dres


def check_devices(**tensors: torch.Tensor) -> None:
    """All tensors on x's device, else an error naming the first one that is not."""
    device = tensors["x"].device
    for name, t in tensors.items():
        if t is not None and t.device != device:
            given = [n for n, u in tensors.items() if u is not None]
            raise InvalidInputError(f"{name} is on {t.device} but x is on {device}; "
                                    f"{', '.join(given[:-1])} and {given[-1]} must be on one device")


def _concrete(size) -> int | None:
    if isinstance(size, int):
        return size
    from torch.fx.experimental.symbolic_shapes import has_guarding_hint, optimization_hint

    return optimization_hint(size) if has_guarding_hint(size) else None


def _shape(t_or_shape) -> tuple[int, ...] | None:
    sizes = tuple(_concrete(s) for s in getattr(t_or_shape, "shape", t_or_shape))
    return None if None in sizes else sizes


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _tiling_rules(shapes: dict, dtypes: dict, gamma_offset: float) -> None:
    # InvalidInputError with its sentence; an absent gamma is a None shape
    host_tiling.tiling(shapes, {n: _dtype_name(dtypes[n]) if dtypes.get(n) is not None else "" for n in NAMES},
                     gamma_offset=gamma_offset)


def check(dy: torch.Tensor, x: torch.Tensor, rstd: torch.Tensor, gamma: torch.Tensor | None,
          gamma_offset: float = attrs.GAMMA_OFFSET, dres: torch.Tensor | None = None) -> None:
    """The tiling's rules for (dy, x, rstd, gamma, dres, gamma_offset): InvalidInputError naming the
    tensor or attribute and the rule. A symbolic gamma_offset (torch.compile tracing with a dynamic
    one) or size waits for the kernel, which runs the same rules on the values."""
    tensors = {n: t for n, t in zip(NAMES, (dy, x, rstd, gamma, dres)) if t is not None}
    shapes = {n: _shape(t) for n, t in tensors.items()}
    if None in shapes.values() or isinstance(gamma_offset, torch.SymFloat):
        return
    _tiling_rules(shapes, {n: t.dtype for n, t in tensors.items()}, gamma_offset)


def eps_value(eps) -> float | None:
    """eps as torch.nn.functional.rms_norm takes it: None (the machine epsilon of x's dtype) or any real
    number (a negative, infinite or NaN eps gives what the formula gives, as in torch), never a
    string. Traced, eps may be symbolic: the eager call checked it."""
    if eps is None or isinstance(eps, torch.SymFloat) or torch.compiler.is_compiling():
        return eps
    if not isinstance(eps, numbers.Real):
        raise InvalidInputError(f"eps must be a real number or None (got {eps!r}).")
    return float(eps)


def gamma_offset_checked(gamma_offset, has_gamma: bool) -> float:
    """The front end's one check of the attribute (attrs.check) in eager mode; traced, the operator's
    fake runs the tiling's rules on it."""
    if torch.compiler.is_compiling():
        return gamma_offset
    return attrs.check({"gamma_offset": gamma_offset}, has_gamma=has_gamma)["gamma_offset"]


def normalized_row(x: torch.Tensor, gamma: torch.Tensor | None, normalized_shape) -> tuple[int, ...]:
    """The row's shape: normalized_shape, which must be x's trailing dims and, with gamma, gamma's
    shape (as torch.nn.functional.rms_norm has it); without it, gamma's shape."""
    if normalized_shape is None:
        if gamma is None:
            raise InvalidInputError("normalized_shape must be given without gamma: it says which trailing dims of x "
                                    "are the row.")
        return tuple(gamma.shape)
    row = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list, torch.Size)) else (normalized_shape,)
    if not row:  # torch's rule too; the row is at least one trailing dim of x
        raise InvalidInputError(f"normalized_shape must name at least one trailing dim of x (got {normalized_shape!r}).")
    if gamma is not None and tuple(gamma.shape) != row:
        raise InvalidInputError(f"normalized_shape {list(row)} must equal gamma's shape {list(gamma.shape)}.")
    if tuple(x.shape[x.ndim - len(row):]) != row:
        raise InvalidInputError(f"normalized_shape {list(row)} must be the trailing dims of x {list(x.shape)}.")
    return row


def require_gamma(gamma, op: str) -> None:
    """Operators with no form without gamma name it, not a tensor the caller never passed."""
    if not isinstance(gamma, torch.Tensor):
        raise InvalidInputError(f"gamma must be a tensor: {op} has no form without gamma (got {gamma!r}).")


def backward_dtypes(x_dtype: torch.dtype, gamma_dtype: torch.dtype) -> tuple[torch.dtype, torch.dtype]:
    """The dtypes the backward hands the operator (dy, x and dres; gamma): x's and gamma's as they
    are where the operator takes them (gamma of x's dtype, or a float32 gamma beside 16-bit x: fp32
    master weights), else both the wider one (a 16-bit gamma beside a float32 x)."""
    if gamma_dtype in (x_dtype, torch.float32):
        return x_dtype, gamma_dtype
    wide = torch.promote_types(x_dtype, gamma_dtype)
    return wide, wide


def check_forward(x: torch.Tensor, gamma: torch.Tensor | None, gamma_offset: float = attrs.GAMMA_OFFSET,
                  ndim: int = 0) -> None:
    """Will the backward of rms_norm(x, gamma) be accepted? Checked before the forward runs.

    The backward runs the operator on dy shaped like x, rstd shaped x.shape[:-k] + (1,) * k
    (k = gamma.ndim, or `ndim` without gamma), in backward_dtypes(x.dtype, gamma.dtype). x and gamma
    may differ in dtype here, each being one of the operator's; the shapes then go to the tiling once.
    """
    check_devices(x=x, gamma=gamma)
    allowed = [d.name for d in op_def.load().type_values]
    for name, t in (("x", x), ("gamma", gamma)):
        if t is not None and _dtype_name(t.dtype) not in allowed:
            raise InvalidInputError(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]} "
                                    f"(got {_dtype_name(t.dtype)}).")
    x_shape = _shape(x)
    gamma_shape = None if gamma is None else _shape(gamma)
    if x_shape is None or (gamma is not None and gamma_shape is None):
        return
    k = min(len(gamma_shape) if gamma is not None else ndim, len(x_shape))
    shapes = {"dy": x_shape, "x": x_shape, "rstd": x_shape[:len(x_shape) - k] + (1,) * k, "gamma": gamma_shape}
    data, scale = (x.dtype, None) if gamma is None else backward_dtypes(x.dtype, gamma.dtype)
    _tiling_rules(shapes, {"dy": data, "x": data, "rstd": torch.float32, "gamma": scale},
                  attrs.GAMMA_OFFSET if isinstance(gamma_offset, torch.SymFloat) else gamma_offset)
