# SPDX-License-Identifier: BSD-3-Clause
"""torch.func (grad, vjp, vmap, jacrev and their compositions) for the forward operators.

torch.library.custom_op's autograd (torch 2.13) is an autograd.Function without setup_context, which
torch.func transforms refuse. Under a transform the front end therefore calls an autograd.Function
made here from the operator's own forward, setup_context and backward (the ones register_autograd
was given): first derivatives only. Forward mode (jvp, jacfwd, hessian) has no formula, and a second
derivative (grad of grad) is refused by name, as torch.autograd refuses a double backward.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch.autograd.function import once_differentiable

from ..errors import InvalidInputError


def active() -> bool:
    """Is a torch.func transform running (in eager mode: torch.compile traces the operators)?"""
    return not torch.compiler.is_compiling() and torch._C._functorch.peek_interpreter_stack() is not None


def _first_derivative_only(name: str) -> None:
    from torch._C._functorch import TransformType
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters

    derivatives = [i for i in retrieve_all_functorch_interpreters() if i.key() in (TransformType.Grad, TransformType.Jvp)]
    if len(derivatives) > 1:
        raise InvalidInputError(f"{name} has first derivatives only (its backward operator has none): under torch.func "
                                "use one grad, vjp or jacrev (vmap around it is fine), not a derivative of a derivative.")


def transformable(op, setup_context: Callable, backward: Callable, name: str) -> Callable:
    """A callable running the operator `op`, or under a torch.func transform an autograd.Function
    whose forward is `op` and whose setup_context and backward are the operator's."""

    class Function(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*args):
            with torch.no_grad():  # the operator's own autograd is this Function's
                return op(*args)

        @staticmethod
        def setup_context(ctx, inputs, output):
            setup_context(ctx, inputs, output)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            return backward(ctx, *grads)

    schema = op._opoverload._schema

    def call(*args):
        if not active():
            return op(*args)
        _first_derivative_only(name)
        # every argument given, as the operator's own autograd hands them to setup_context
        return Function.apply(*args, *(a.default_value for a in schema.arguments[len(args):]))

    return call
