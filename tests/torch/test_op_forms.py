# SPDX-License-Identifier: BSD-3-Clause
"""The operator's forms through the torch layers, against torch's own rms_norm in float64.

gamma_offset: the op's attribute, rms_norm(..., offset=) and RMSNorm(..., offset=), on the scale
weight + gamma_offset. No gamma: the op with gamma=None (an empty dgamma), rms_norm(x, None,
normalized_shape=...) and RMSNorm(elementwise_affine=False)."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import RMSNorm, rms_norm  # noqa: E402

from torch_helpers import DTYPES, assert_precise, randn  # noqa: E402

OP = torch.ops.rmsnorm_backward.rms_norm_backward


def reference(x, w, eps, offset):
    """torch's own rms_norm in float64 on the scale w + offset."""
    return torch.nn.functional.rms_norm(x, w.shape, w + offset, eps)


@pytest.mark.parametrize("dtype", DTYPES)
# (25, 40): a thousand elements (see test_rms_norm_without_gamma_matches_torch_in_float64)
@pytest.mark.parametrize("shape", [(25, 40), (3, 7, 3000)])
def test_rms_norm_with_offset_matches_torch_in_float64(rng, dtype, shape):
    dtype = DTYPES[dtype]
    x, dy = randn(rng, shape, dtype), randn(rng, shape, dtype)
    w = (0.1 * randn(rng, shape[-1:], torch.float32)).to(dtype)
    leaf_x, leaf_w = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = rms_norm(leaf_x, leaf_w, 1e-6, gamma_offset=1.0)
    y.backward(dy)
    ref_x, ref_w = x.double().requires_grad_(), w.double().requires_grad_()
    ref = reference(ref_x, ref_w, 1e-6, 1.0)
    ref.backward(dy.double())
    assert_precise(y.detach(), ref.detach(), what="y")
    assert_precise(leaf_x.grad, ref_x.grad, what="dx")
    assert_precise(leaf_w.grad, ref_w.grad, what="dweight", round_golden=dtype == torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_with_an_offset(rng, dtype):
    dtype = DTYPES[dtype]
    x = randn(rng, (6, 96), dtype)
    rstd = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
    args = (randn(rng, (6, 96), dtype), x, rstd, randn(rng, (96,), dtype), None, 0.5)
    torch.library.opcheck(OP, args)
    forward = torch.ops.rmsnorm_backward.rms_norm
    torch.library.opcheck(forward, (x.clone().requires_grad_(), randn(rng, (96,), dtype).requires_grad_(), 1e-6, 1.0))


def test_the_offset_is_an_attribute_of_the_schema_with_op_defs_default():
    (arg,) = [a for a in OP.default._schema.arguments if a.name == "gamma_offset"]
    assert str(arg.type) == "float" and arg.default_value == 0.0


def test_module_with_offset_starts_at_scale_one_and_reprs_it(rng):
    norm = RMSNorm(64, gamma_offset=1.0)
    assert torch.equal(norm.weight.detach(), torch.zeros(64)) and "gamma_offset=1.0" in repr(norm)
    x = randn(rng, (4, 64), torch.float32)
    torch.testing.assert_close(norm(x), torch.nn.RMSNorm(64)(x), rtol=0, atol=0)


def test_compiled_module_with_offset_matches_eager(rng):
    norm = RMSNorm(48, 1e-5, gamma_offset=1.0)
    with torch.no_grad():
        norm.weight.copy_(0.1 * randn(rng, (48,), torch.float32))
    x = randn(rng, (8, 48), torch.bfloat16)
    compiled = torch.compile(norm, fullgraph=True, backend="aot_eager")
    eager_x, compiled_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    norm(eager_x).sum().backward()
    eager_w, norm.weight.grad = norm.weight.grad, None
    compiled(compiled_x).sum().backward()
    torch.testing.assert_close(compiled_x.grad, eager_x.grad, rtol=0, atol=0)
    torch.testing.assert_close(norm.weight.grad, eager_w, rtol=0, atol=0)


@pytest.mark.parametrize("make,why", [
    (lambda x, w: rms_norm(x, w, gamma_offset=float("inf")), "gamma_offset must be finite in float32 (got inf)."),
    (lambda x, w: rms_norm(x, w, gamma_offset="1"), "gamma_offset must be a real number (got '1')."),
    (lambda x, w: RMSNorm(8, elementwise_affine=False, gamma_offset=1.0), "gamma_offset must be 0 without gamma (got 1)."),
    (lambda x, w: RMSNorm(8, 1e-6, False, gamma_offset=1.0), "gamma_offset must be 0 without gamma (got 1)."),
    (lambda x, w: OP(x, x, x[:, :1], w, gamma_offset=float("nan")), "gamma_offset must be finite in float32 (got nan)."),
])
def test_bad_offsets_are_refused_in_one_sentence(rng, make, why):
    x, w = randn(rng, (4, 8), torch.float32), randn(rng, (8,), torch.float32)
    with pytest.raises(InvalidInputError) as e:
        make(x, w)
    assert str(e.value) == why


# Torch's float64 reference recomputes rstd from x, the op uses the forward's fp32 rstd: a bf16 dx
# element near a rounding midpoint may then round one ulp away (up to 0.78 % relative, past rtol).
# The standard allows rtol x size failed elements, none below 250 bf16 elements, so every tensor has
# about a thousand.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,normalized_shape", [((25, 40), (40,)), ((3, 7, 3000), (3000,)), ((20, 6, 8), (6, 8))])
def test_rms_norm_without_gamma_matches_torch_in_float64(rng, dtype, shape, normalized_shape):
    dtype = DTYPES[dtype]
    x, dy = randn(rng, shape, dtype), randn(rng, shape, dtype)
    leaf = x.clone().requires_grad_()
    y = rms_norm(leaf, None, 1e-6, normalized_shape=normalized_shape)
    y.backward(dy)
    ref_x = x.double().requires_grad_()
    ref = torch.nn.functional.rms_norm(ref_x, normalized_shape, None, 1e-6)
    ref.backward(dy.double())
    assert_precise(y.detach(), ref.detach(), what="y")
    assert_precise(leaf.grad, ref_x.grad, what="dx")


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_without_gamma(rng, dtype):
    dtype = DTYPES[dtype]
    x = randn(rng, (6, 96), dtype)
    rstd = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
    dx, dgamma = OP(randn(rng, (6, 96), dtype), x, rstd, None)
    assert dx.shape == x.shape and dgamma.shape == (0,) and dgamma.dtype == torch.float32
    torch.library.opcheck(OP, (randn(rng, (6, 96), dtype), x, rstd, None))
    forward = torch.ops.rmsnorm_backward.rms_norm
    torch.library.opcheck(forward, (x.clone().requires_grad_(), None, 1e-6, 0.0, 1))


def test_gamma_is_optional_in_the_schema():
    (arg,) = [a for a in OP.default._schema.arguments if a.name == "gamma"]
    assert str(arg.type) == "Optional[Tensor]"


def test_a_module_without_weight_runs_the_operator_without_gamma(rng, monkeypatch):
    import rmsnorm_backward.simulate as simulate_module

    seen = []
    real = simulate_module.launch

    def spy(dy, x, rstd, gamma, dres=None, **options):
        seen.append(gamma)
        return real(dy, x, rstd, gamma, dres, **options)

    monkeypatch.setattr(simulate_module, "launch", spy)
    x = randn(rng, (4, 64), torch.float32).requires_grad_()
    RMSNorm(64, elementwise_affine=False)(x).sum().backward()
    assert seen == [None] and x.grad is not None


def test_rms_norm_without_gamma_needs_its_row():
    x = torch.randn(4, 8)
    with pytest.raises(InvalidInputError) as e:
        rms_norm(x, None)
    assert str(e.value) == "normalized_shape must be given without gamma: it says which trailing dims of x are the row."
    with pytest.raises(InvalidInputError) as e:
        rms_norm(x, None, normalized_shape=(5,))
    assert str(e.value) == "normalized_shape [5] must be the trailing dims of x [4, 8]."
