# SPDX-License-Identifier: BSD-3-Clause
"""The casting modes of the forward operators: where y is rounded ("fp32": once, after the weight;
"input": the normalised x rounded to x's dtype before the weight, in the dtype torch promotes to)."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402

from torch_helpers import randn, rstd_of  # noqa: E402

OPS = torch.ops.rmsnorm_backward


@pytest.mark.parametrize("gamma_dtype", [torch.bfloat16, torch.float32])
def test_input_casting_rounds_before_the_weight(rng, gamma_dtype):
    x, r = randn(rng, (6, 80), torch.bfloat16), randn(rng, (6, 80), torch.bfloat16)
    gamma = randn(rng, (80,), gamma_dtype)
    normed = (x.float() * rstd_of(x, 1)).to(torch.bfloat16)
    y, _rstd = OPS.rms_norm(x, gamma, 1e-6, 0.0, 0, "input")
    assert y.dtype == torch.promote_types(torch.bfloat16, gamma_dtype)
    assert torch.equal(y, gamma * normed)
    y, s, _rstd = OPS.add_rms_norm(x, r, gamma, 1e-6, 0.0, "input")
    assert torch.equal(y, gamma * (s.float() * rstd_of(s, 1)).to(torch.bfloat16))


def test_an_unknown_casting_is_refused(rng):
    x = randn(rng, (2, 8))
    with pytest.raises(InvalidInputError, match=r"^casting must be one of fp32, input \(got 'gemma'\).$"):
        OPS.rms_norm(x, torch.ones(8), 1e-6, 0.0, 0, "gemma")


@pytest.mark.parametrize("casting", ["fp32", "input"])
def test_opcheck(rng, casting):
    x, r = (randn(rng, (4, 48), torch.bfloat16).requires_grad_() for _ in range(2))
    gamma = randn(rng, (48,)).requires_grad_()  # fp32 master weights beside bf16 x: y's dtype depends on casting
    torch.library.opcheck(OPS.rms_norm, (x, gamma, 1e-6, 0.0, 0, casting))
    torch.library.opcheck(OPS.add_rms_norm, (x, r, gamma, 1e-6, 0.0, casting))
