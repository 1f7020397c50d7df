"""torch.func (grad, vjp, vmap, jacrev and their compositions) for rms_norm and add_rms_norm.

torch.library.custom_op's autograd (torch 2.13) is an autograd.Function without setup_context, which
torch.func transforms refuse. Under a transform the front end therefore calls these Functions, whose
forward and backward are the same operators and the same backward formulas (functional._backward,
fused._backward): first derivatives only. Forward mode (jvp, jacfwd, hessian) has no formula, and a
second derivative (grad of grad) is refused by name, as torch.autograd refuses a double backward.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..errors import InvalidInputError
from . import functional, fused


def active() -> bool:
    """Is a torch.func transform running (in eager mode: torch.compile traces the operators)?"""
    return not torch.compiler.is_compiling() and torch._C._functorch.peek_interpreter_stack() is not None


def _first_derivative_only(op: str) -> None:
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    from torch._C._functorch import TransformType

    derivatives = [i for i in retrieve_all_functorch_interpreters() if i.key() in (TransformType.Grad, TransformType.Jvp)]
    if len(derivatives) > 1:
        raise InvalidInputError(f"{op} has first derivatives only (its backward operator has none): under torch.func "
                                "use one grad, vjp or jacrev (vmap around it is fine), not a derivative of a derivative.")


class RmsNorm(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, gamma, eps, offset, ndim, casting):
        with torch.no_grad():  # the operator's own autograd is this Function's
            return functional.rms_norm_forward(x, gamma, eps, offset, ndim, casting)

    setup_context = staticmethod(functional._setup_context)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, drstd):
        return functional._backward(ctx, dy, drstd)


class AddRmsNorm(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, residual, gamma, eps, offset, casting):
        with torch.no_grad():
            return fused.add_rms_norm_forward(x, residual, gamma, eps, offset, casting)

    setup_context = staticmethod(fused._setup_context)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, ds, drstd):
        return fused._backward(ctx, dy, ds, drstd)


def rms_norm_forward(x, gamma, eps, offset=0.0, ndim=0, casting="fp32"):
    """The operator rms_norm, or under a torch.func transform the Function running it."""
    if not active():
        return functional.rms_norm_forward(x, gamma, eps, offset, ndim, casting)
    _first_derivative_only("rms_norm")
    return RmsNorm.apply(x, gamma, eps, offset, ndim, casting)


def add_rms_norm_forward(x, residual, gamma, eps, offset=0.0, casting="fp32"):
    """The operator add_rms_norm, or under a torch.func transform the Function running it."""
    if not active():
        return fused.add_rms_norm_forward(x, residual, gamma, eps, offset, casting)
    _first_derivative_only("add_rms_norm")
    return AddRmsNorm.apply(x, residual, gamma, eps, offset, casting)
