# SPDX-License-Identifier: BSD-3-Clause
"""add_rms_norm (the fused residual add + RMSNorm) against torch in float64: y and the residual
stream out, and the gradients of x, residual and gamma when both outputs are used downstream, which
the backward computes in one kernel pass (dres)."""

import numpy as np

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import add_rms_norm  # noqa: E402

from torch_helpers import DTYPES, assert_precise, randn  # noqa: E402

FORWARD = torch.ops.rmsnorm_backward.add_rms_norm


@pytest.mark.parametrize("offset", [0.0, 1.0])
@pytest.mark.parametrize("dtype", DTYPES)
# (25, 40): a thousand elements, so the standard allows the few bf16 elements that round one ulp
# away from torch's float64 reference, whose rstd differs from the op's fp32 one (test_op_forms)
@pytest.mark.parametrize("shape", [(25, 40), (3, 7, 3000), (2, 20000)])
def test_add_rms_norm_matches_torch_in_float64(rng, dtype, shape, offset):
    dtype = DTYPES[dtype]
    x, r, dy, ds = (randn(rng, shape, dtype) for _ in range(4))
    w = (randn(rng, shape[-1:], torch.float32) * 0.1 + (1 - offset)).to(dtype)
    leaves = [t.clone().requires_grad_() for t in (x, r, w)]
    y, s = add_rms_norm(*leaves[:2], leaves[2], 1e-6, offset)
    torch.autograd.backward((y, s), (dy, ds))
    # s is x + r rounded to x's dtype (the residual stream as stored); the golden starts from that s
    torch.testing.assert_close(s.detach(), x + r, rtol=0, atol=0)
    ref_s, ref_w = s.detach().double().requires_grad_(), w.double().requires_grad_()
    ref_y = torch.nn.functional.rms_norm(ref_s, w.shape, ref_w + offset, 1e-6)
    ref_y.backward(dy.double())
    d_stream = ref_s.grad + ds.double()  # what reaches x and the residual alike
    # y is the float32 result rounded once: within half an ulp of the float64 value (which is inside
    # the standard's rtol for every dtype), while the neighbour of the rounded golden may be a whole ulp off
    assert_precise(y.detach(), ref_y.detach(), what="y", round_golden=False)
    assert_precise(leaves[0].grad, d_stream, what="dx")
    assert_precise(leaves[1].grad, d_stream, what="dresidual")
    assert_precise(leaves[2].grad, ref_w.grad, what="dweight", round_golden=dtype == torch.float32)


def test_the_backward_is_one_kernel_pass_with_dres(rng, monkeypatch):
    import rmsnorm_backward.simulate as simulate_module
    seen = []
    real = simulate_module.launch

    def spy(dy, x, rstd, gamma, dres=None, **options):
        seen.append(dres is not None)
        return real(dy, x, rstd, gamma, dres, **options)

    monkeypatch.setattr(simulate_module, "launch", spy)
    x, r = (randn(rng, (4, 64)).requires_grad_() for _ in range(2))
    y, s = add_rms_norm(x, r, torch.ones(64, requires_grad=True))
    (y.sum() + s.sum()).backward()
    assert seen == [True]
    seen.clear()
    y, s = add_rms_norm(x, r, torch.ones(64, requires_grad=True))
    y.sum().backward()  # s unused downstream: no gradient on it, the plain backward
    assert seen == [False]


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(rng, dtype):
    dtype = DTYPES[dtype]
    args = (randn(rng, (6, 96), dtype).requires_grad_(), randn(rng, (6, 96), dtype).requires_grad_(),
            randn(rng, (96,), dtype).requires_grad_(), 1e-6, 0.0)
    torch.library.opcheck(FORWARD, args)
    x = randn(rng, (6, 96), dtype)
    rstd = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
    torch.library.opcheck(torch.ops.rmsnorm_backward.rms_norm_backward,
                          (randn(rng, (6, 96), dtype), x, rstd, randn(rng, (96,), dtype), randn(rng, (6, 96), dtype)))


def test_compiled_matches_eager(rng):
    def block(x, r, w):
        y, s = add_rms_norm(x, r, w)
        return (y * 2).sum() + s.sum()

    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    grads = []
    for fn in (block, compiled):
        leaves = [randn(np.random.default_rng(3), (8, 48), torch.bfloat16).requires_grad_() for _ in range(2)]
        w = torch.ones(48, dtype=torch.bfloat16, requires_grad=True)
        fn(*leaves, w).backward()
        grads.append([t.grad for t in (*leaves, w)])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_residual_must_match_x(rng):
    x = randn(rng, (4, 8))
    with pytest.raises(InvalidInputError) as e:
        add_rms_norm(x, x[:, :4], torch.ones(8))
    assert str(e.value) == ("residual must have the shape and dtype of x (residual [4, 4] torch.float32, "
                            "x [4, 8] torch.float32).")
