# SPDX-License-Identifier: BSD-3-Clause
"""rms_norm / RMSNorm gradients against torch autograd of a float64 reference RMSNorm."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import RMSNorm, rms_norm  # noqa: E402

from torch_helpers import DTYPES, assert_precise, randn  # noqa: E402

EPS = 1e-6


def reference(x, gamma, eps=EPS):
    """RMSNorm written with plain torch ops: differentiated by torch's autograd."""
    dims = tuple(range(x.ndim - gamma.ndim, x.ndim))
    return x * torch.rsqrt(x.square().mean(dims, keepdim=True) + eps) * gamma


def reference_grads(x, gamma, dy):
    x64, g64 = (t.detach().double().requires_grad_() for t in (x, gamma))
    reference(x64, g64).backward(dy.double())
    return x64.grad, g64.grad


@pytest.mark.parametrize(("x_dtype", "gamma_dtype"), [("float32", "float32"), ("float16", "float16"),
                                                     ("bfloat16", "bfloat16"), ("bfloat16", "float32")])
def test_opcheck_of_the_forward_with_its_autograd(rng, x_dtype, gamma_dtype):
    x = randn(rng, (3, 4, 40), DTYPES[x_dtype]).requires_grad_()
    gamma = randn(rng, (40,), DTYPES[gamma_dtype]).requires_grad_()
    torch.library.opcheck(torch.ops.rmsnorm_backward.rms_norm, (x, gamma, 1e-6))


def test_the_reference_passes_gradcheck_in_float64(rng):
    x = randn(rng, (3, 4, 6), torch.float64).requires_grad_()
    gamma = randn(rng, (4, 6), torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(reference, (x, gamma))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalized_shape", [(130,), (3, 40), (4100,)])
def test_grads_meet_the_precision_standard(rng, dtype, normalized_shape):
    dtype = DTYPES[dtype]
    norm = RMSNorm(normalized_shape, eps=EPS, dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(randn(rng, normalized_shape, dtype))
    x = randn(rng, (5,) + normalized_shape, dtype).requires_grad_()
    dy = randn(rng, x.shape, dtype)
    y = norm(x)
    y.backward(dy)
    ref_dx, ref_dgamma = reference_grads(x, norm.weight, dy)
    assert_precise(y.detach(), reference(x.detach().double(), norm.weight.detach().double()), what="y")
    assert_precise(x.grad, ref_dx, what="dx")
    assert_precise(norm.weight.grad, ref_dgamma, what="dgamma", round_golden=dtype != torch.float32)


def test_mixed_precision_fp32_gamma_with_bf16_x(rng, monkeypatch):
    """fp32 master weights: the kernel gets dy and x in bf16 and gamma in float32 (nothing upcast)."""
    
    import rmsnorm_backward.simulate as simulate_module
    seen, real = [], simulate_module.launch

    def spy(dy, x, rstd, gamma, dres=None, **options):
        seen.append((dy.dtype.name, x.dtype.name, gamma.dtype.name))
        return real(dy, x, rstd, gamma, dres, **options)

    monkeypatch.setattr(simulate_module, "launch", spy)
    gamma = randn(rng, (96,)).requires_grad_()
    x = randn(rng, (7, 96), torch.bfloat16).requires_grad_()
    dy = randn(rng, x.shape, torch.bfloat16)
    y = rms_norm(x, gamma)
    y.backward(dy)
    assert seen == [("bfloat16", "bfloat16", "float32")]
    ref_dx, ref_dgamma = reference_grads(x, gamma, dy)
    assert y.dtype == torch.bfloat16 and x.grad.dtype == torch.bfloat16 and gamma.grad.dtype == torch.float32
    assert_precise(x.grad, ref_dx, what="dx")
    assert_precise(gamma.grad, ref_dgamma, what="dgamma", round_golden=False)


def test_grad_in_another_dtype_and_expanded(rng):
    """A fp32 grad for a fp16 output, broadcast from one row: autograd casts it to fp16 first."""
    x = randn(rng, (6, 48), torch.float16).requires_grad_()
    gamma = randn(rng, (48,), torch.float16).requires_grad_()
    dy = randn(rng, (1, 48)).expand(6, 48)
    rms_norm(x, gamma).backward(dy)
    ref_dx, ref_dgamma = reference_grads(x, gamma, dy.half())
    assert_precise(x.grad, ref_dx, what="dx")
    assert_precise(gamma.grad, ref_dgamma, what="dgamma")


def test_same_forward_and_state_dict_as_torch_rmsnorm(rng):
    ours, theirs = RMSNorm((4, 24), eps=1e-5), torch.nn.RMSNorm((4, 24), eps=1e-5)
    theirs.load_state_dict({"weight": randn(rng, (4, 24))})
    ours.load_state_dict(theirs.state_dict())
    x = randn(rng, (3, 4, 24))
    torch.testing.assert_close(ours(x), theirs(x))


@pytest.mark.parametrize(("x_shape", "gamma_shape", "x_dtype", "gamma_dtype", "name"), [
    ((4, 64), (32,), torch.float32, torch.float32, "gamma"),
    ((64,), (32,), torch.float32, torch.float32, "gamma"),
    ((4, 64), (64,), torch.float64, torch.float64, "x"),
    ((4, 64), (64,), torch.float16, torch.float64, "gamma"),
])
def test_bad_inputs_are_refused_before_the_forward(x_shape, gamma_shape, x_dtype, gamma_dtype, name):
    with pytest.raises(InvalidInputError, match=rf"^{name} must"):
        rms_norm(torch.ones(x_shape, dtype=x_dtype), torch.ones(gamma_shape, dtype=gamma_dtype))


def test_gamma_on_another_device_is_refused():
    with pytest.raises(InvalidInputError, match="gamma is on meta but x is on cpu"):
        rms_norm(torch.ones(4, 8), torch.ones(8, device="meta"))


def test_the_package_re_exports_them():
    import rmsnorm_backward

    assert (rmsnorm_backward.RMSNorm, rmsnorm_backward.rms_norm) == (RMSNorm, rms_norm)


def test_bad_gamma_is_refused_while_compiling_without_grad():
    """Even where broadcasting would let the forward run and no backward is traced."""
    compiled = torch.compile(rms_norm, fullgraph=True, backend="eager")
    with pytest.raises(Exception, match=r"gamma must equal the trailing 1 dims of x"):
        compiled(torch.ones(4, 64), torch.ones(1))


def test_double_backward_is_refused_not_silently_zero(rng):
    x, gamma = randn(rng, (4, 64)).requires_grad_(), randn(rng, (64,)).requires_grad_()
    dx, = torch.autograd.grad(rms_norm(x, gamma).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="rms_norm_backward.* no autograd formula"):
        dx.sum().backward()
