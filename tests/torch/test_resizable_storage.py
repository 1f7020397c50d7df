# SPDX-License-Identifier: BSD-3-Clause
"""FSDP frees and re-allocates parameter and gradient memory by resizing storage in place. After a
forward and backward through the operator, no tensor it saw or made may have lost that right:
inputs, weights, their grads and the outputs all resize to 0 and back."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.torch import RMSNorm, add_rms_norm  # noqa: E402

from torch_helpers import DTYPES, randn  # noqa: E402


def resize_round_trip(t: torch.Tensor) -> None:
    storage = t.untyped_storage()
    size = storage.nbytes()
    storage.resize_(0)
    storage.resize_(size)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_storage_stays_resizable_after_a_backward(rng, dtype):
    dtype = DTYPES[dtype]
    norm = RMSNorm(64, eps=1e-6, dtype=dtype)
    x, r = (randn(rng, (3, 5, 64), dtype).requires_grad_() for _ in range(2))
    y, s = add_rms_norm(x, r, norm.weight)
    z = norm(s)
    (y.float().square().sum() + z.float().sum()).backward()
    for name, t in {"x": x, "residual": r, "weight": norm.weight, "y": y, "s": s, "z": z,
                    "x.grad": x.grad, "residual.grad": r.grad, "weight.grad": norm.weight.grad}.items():
        assert t is not None, name
        resize_round_trip(t)


def test_the_operator_outputs_own_their_storage(rng):
    x = randn(rng, (4, 32))
    rstd = torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6)
    dx, dgamma = torch.ops.rmsnorm_backward.rms_norm_backward(randn(rng, (4, 32)), x, rstd, randn(rng, (32,)))
    for t in (dx, dgamma):
        resize_round_trip(t)
