# SPDX-License-Identifier: BSD-3-Clause
"""torch.func on rms_norm and add_rms_norm: grad, vjp, vmap of grad and jacrev give torch's float64
values within the precision standard; a second derivative is refused in one sentence."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import add_rms_norm, rms_norm  # noqa: E402

from torch_helpers import assert_precise, randn  # noqa: E402

func = torch.func


def reference(x, w, offset=0.0):
    return torch.nn.functional.rms_norm(x, w.shape, w + offset, 1e-6)


def fused_reference(x, r, w):
    s = x + r
    return reference(s, w), s


@pytest.mark.parametrize("transform", ["grad", "vmap_grad", "jacrev", "vjp"])
def test_transforms_of_rms_norm(rng, transform):
    x, w, dy = randn(rng, (3, 4, 24)), randn(rng, (24,)), randn(rng, (3, 4, 24))

    def apply(norm, x, w):
        if transform == "grad":
            return func.grad(lambda x, w: (norm(x, w, 1.0) * dy).sum(), argnums=(0, 1))(x, w)
        if transform == "vmap_grad":
            return func.vmap(func.grad(lambda x, dy: (norm(x, w, 1.0) * dy).sum()))(x, dy)
        if transform == "jacrev":
            return func.jacrev(lambda x: norm(x, w, 1.0))(x[0, 0])
        return func.vjp(lambda x, w: norm(x, w, 1.0), x, w)[1](dy)

    ours = apply(lambda x, w, offset: rms_norm(x, w, 1e-6, offset), x, w)
    golden = apply(reference, x.double(), w.double())
    for i, (a, g) in enumerate(zip(*(t if isinstance(t, tuple) else (t,) for t in (ours, golden)))):
        assert_precise(a, g, what=f"{transform} output {i}", round_golden=False)


def test_grad_of_add_rms_norm(rng):
    x, r, w, dy, ds = (randn(rng, (5, 32)) for _ in range(5))
    w = w[0]

    def loss(norm):
        def f(x, r, w):
            y, s = norm(x, r, w)
            return (y * dy).sum() + (s * ds).sum()
        return f

    ours = func.grad(loss(add_rms_norm), argnums=(0, 1, 2))(x, r, w)
    golden = func.grad(loss(fused_reference), argnums=(0, 1, 2))(x.double(), r.double(), w.double())
    for i, (a, g) in enumerate(zip(ours, golden)):
        assert_precise(a, g, what=f"d input {i}", round_golden=False)


def test_a_second_derivative_is_refused(rng):
    x, w = randn(rng, (2, 16)), randn(rng, (16,))
    inner = func.grad(lambda x: rms_norm(x, w).square().sum())
    with pytest.raises(InvalidInputError, match=r"^rms_norm has first derivatives only \(its backward operator has "
                                                r"none\): under torch.func use one grad, vjp or jacrev"):
        func.grad(lambda x: inner(x).sum())(x)
