# SPDX-License-Identifier: BSD-3-Clause
"""torch.ops.rmsnorm_backward.rms_norm_backward: registration, the CPU twin path, the fake path, errors."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import rmsnorm_backward.torch  # noqa: E402,F401  registers the operator
from rmsnorm_backward.errors import EnvironmentSetupError, InvalidInputError  # noqa: E402
from rmsnorm_backward.golden import golden  # noqa: E402
from rmsnorm_backward.torch._bridge import from_numpy, to_numpy  # noqa: E402

from torch_helpers import DTYPES, assert_precise, randn, rstd_of  # noqa: E402

op = torch.ops.rmsnorm_backward.rms_norm_backward


def inputs(rng, shape, k, dtype, *, keepdim=True):
    x = randn(rng, shape, dtype)
    return randn(rng, shape, dtype), x, rstd_of(x, k, keepdim=keepdim), randn(rng, shape[-k:], dtype)


def assert_matches_golden(dx, dgamma, dy, x, rstd, gamma):
    g_dx, g_dgamma = golden(*(t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
                              for t in (dy, x, rstd, gamma)))
    assert dx.dtype == x.dtype and dx.shape == x.shape
    assert dgamma.dtype == torch.float32 and dgamma.shape == gamma.shape
    assert_precise(dx, g_dx, what="dx")
    assert_precise(dgamma, g_dgamma, what="dgamma", round_golden=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(rng, dtype):
    torch.library.opcheck(op, inputs(rng, (3, 5, 40), 1, DTYPES[dtype]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_the_golden(rng, dtype):
    args = inputs(rng, (6, 3, 24), 2, DTYPES[dtype], keepdim=False)
    assert_matches_golden(*op(*args), *args)


def test_non_contiguous_and_expanded_inputs(rng):
    dy, x, rstd, gamma = inputs(rng, (8, 72), 1, torch.float16)
    transposed = randn(rng, (72, 8), torch.float16).t()
    expanded = randn(rng, (1, 72), torch.float16).expand(8, 72)
    for d in (transposed, expanded, dy[:, ::2].repeat_interleave(2, dim=1)):
        assert_matches_golden(*op(d, x, rstd, gamma), d, x, rstd, gamma)
    torch.library.opcheck(op, (expanded, x.t().contiguous().t(), rstd, gamma))
    strided_x = randn(rng, (16, 72), torch.float16)[::2]
    assert_matches_golden(*op(dy, strided_x, rstd_of(strided_x, 1), gamma), dy, strided_x,
                          rstd_of(strided_x, 1), gamma)


def test_zero_rows_give_zero_dgamma(rng):
    dy, x, rstd, gamma = inputs(rng, (0, 33), 1, torch.float32)
    dx, dgamma = op(dy, x, rstd, gamma)
    assert dx.shape == (0, 33)
    assert torch.equal(dgamma, torch.zeros(33))


def test_meta_tensors_give_shapes_and_dtypes():
    dy, x = (torch.empty(4, 7, 96, dtype=torch.bfloat16, device="meta") for _ in range(2))
    dx, dgamma = op(dy, x, torch.empty(4, 7, 1, device="meta"), torch.empty(96, dtype=torch.bfloat16,
                                                                           device="meta"))
    assert (dx.shape, dx.dtype, dx.device.type) == ((4, 7, 96), torch.bfloat16, "meta")
    assert (dgamma.shape, dgamma.dtype) == ((96,), torch.float32)


BAD = [
    ("dy", lambda dy, x, rstd, gamma: (dy[:, :-1], x, rstd, gamma)),
    ("gamma", lambda dy, x, rstd, gamma: (dy, x, rstd, gamma[:-1])),
    ("rstd", lambda dy, x, rstd, gamma: (dy, x, rstd[:-1], gamma)),
    ("rstd", lambda dy, x, rstd, gamma: (dy, x, rstd.half(), gamma)),
    ("dy", lambda dy, x, rstd, gamma: (dy.float(), x, rstd, gamma)),
    ("gamma", lambda dy, x, rstd, gamma: (dy, x, rstd, gamma.bfloat16())),  # neither x's dtype nor float32
    ("x", lambda dy, x, rstd, gamma: (dy.double(), x.double(), rstd, gamma.double())),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize(("name", "spoil"), BAD)
def test_bad_inputs_name_the_tensor(rng, device, name, spoil):
    args = spoil(*(t.to(device) for t in inputs(rng, (4, 64), 1, torch.float16)))
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        op(*args)


def test_tensors_on_different_devices_are_refused(rng):
    dy, x, rstd, gamma = inputs(rng, (4, 64), 1, torch.float32)
    with pytest.raises(InvalidInputError, match=r"gamma is on meta but x is on cpu"):
        op(dy, x, rstd, gamma.to("meta"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_numpy_bridge_views_inputs_and_owns_outputs(rng, dtype):
    t = randn(rng, (3, 40), DTYPES[dtype])
    a = to_numpy(t)
    assert a.ctypes.data == t.data_ptr() and a.dtype.name == dtype
    back = from_numpy(a)
    assert back.data_ptr() != t.data_ptr() and torch.equal(back, t)
    for storage in (t.untyped_storage(), back.untyped_storage()):  # Tensor.numpy() would forbid this
        storage.resize_(0)


def test_npu_kernel_is_registered_and_says_how_to_build_the_adapter(monkeypatch):
    from rmsnorm_backward.torch import _npu

    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "PrivateUse1")
    monkeypatch.setattr(_npu, "ADAPTER", "rmsnorm_backward_npu_adapter_not_built")
    _npu.adapter.cache_clear()
    try:
        with pytest.raises(EnvironmentSetupError, match="pip install --no-build-isolation framework/torch_npu_adapter"):
            _npu.adapter()
    finally:
        _npu.adapter.cache_clear()
