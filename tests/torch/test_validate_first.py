# SPDX-License-Identifier: BSD-3-Clause
"""The torch entry points check shapes before they touch data: a 1 x 2^31 broadcast view (dy and x)
is refused in one sentence at once instead of being densified, a request larger than this machine
likewise, and the tiling search runs once per distinct request: rms_norm's backward reuses the
decision its forward check made, a training loop's later steps run none, and the eager op, its fake
and the module share it. Each attribute is checked once per eager forward and backward (attrs.check)."""
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import rmsnorm_backward.torch  # noqa: E402,F401  registers the operator
from rmsnorm_backward import _tiling, attrs, host_tiling  # noqa: E402
from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import RMSNorm, add_rms_norm, rms_norm  # noqa: E402

from torch_helpers import randn, rstd_of  # noqa: E402

op = torch.ops.rmsnorm_backward.rms_norm_backward
SOON = 2.0  # seconds; densifying 2^31 elements took 30-50 s
MEMORY_LIMIT = r"needs about [0-9.]+ GiB of host memory, more than the [0-9.]+ GiB available here"


@pytest.fixture(scope="module", autouse=True)
def warm():
    """One small call of each entry first: torch imports its dispatch machinery (dynamo) on the
    first custom-op call, which is no part of what is timed here."""
    rng = np.random.default_rng(0)
    x, gamma = randn(rng, (2, 16)).requires_grad_(), randn(rng, (16,)).requires_grad_()
    rms_norm(x, gamma).sum().backward()
    with FakeTensorMode():
        op(torch.empty(2, 16), torch.empty(2, 16), torch.empty(2, 1), torch.empty(16))


def broadcast(*shape):
    return torch.ones(1).expand(*shape)  # zero strides: one element of memory


@pytest.mark.parametrize("rows, cols, message", [
    (1, 2**31, r"gamma must have 1 to 2\^30 elements \(got 2147483648\)\."),
    (2**20, 2**20, r"simulate on x \[1048576, 1048576\] float32 " + MEMORY_LIMIT),
])
def test_the_op_refuses_huge_broadcast_views_at_once(rows, cols, message):
    start = time.monotonic()
    with pytest.raises(InvalidInputError, match=message):
        op(broadcast(rows, cols), broadcast(rows, cols), broadcast(rows, 1), broadcast(cols))
    assert time.monotonic() - start < SOON


def test_rms_norm_refuses_a_huge_broadcast_input_before_its_forward():
    start = time.monotonic()
    with pytest.raises(InvalidInputError, match=r"gamma must have 1 to 2\^30 elements"):
        rms_norm(broadcast(1, 2**31), broadcast(2**31))
    assert time.monotonic() - start < SOON


@pytest.fixture
def tiling_calls(monkeypatch):
    """The x shapes the C++ tiling search ran on since the fixture was made (from an empty cache)."""
    calls = []
    real = _tiling.compute_tiling

    def counted(**kwargs):
        calls.append(kwargs["x_shape"])
        return real(**kwargs)

    monkeypatch.setattr(_tiling, "compute_tiling", counted)
    host_tiling.clear_tiling_cache()
    yield calls
    host_tiling.clear_tiling_cache()  # no decision of the counted function outlives the test


def test_the_eager_op_runs_the_tiling_once(rng, tiling_calls):
    x = randn(rng, (5, 48))
    dx, dgamma = op(randn(rng, (5, 48)), x, rstd_of(x, 1), randn(rng, (48,)))
    assert tiling_calls == [[5, 48]] and dx.shape == x.shape and dgamma.shape == (48,)


def test_the_fake_op_runs_the_tiling_once(tiling_calls):
    with FakeTensorMode():
        dx, _ = op(torch.empty(3, 40), torch.empty(3, 40), torch.empty(3, 1), torch.empty(40))
    assert tiling_calls == [[3, 40]] and dx.shape == (3, 40)


@pytest.mark.parametrize("gamma_dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_runs_the_tiling_once_for_forward_and_backward(rng, tiling_calls, gamma_dtype):
    x = randn(rng, (6, 32), torch.bfloat16).requires_grad_()
    gamma = randn(rng, (32,), gamma_dtype).requires_grad_()
    y = rms_norm(x, gamma)
    assert tiling_calls == [[6, 32]]
    y.float().sum().backward()
    assert tiling_calls == [[6, 32]] and x.grad.shape == x.shape


@pytest.fixture
def attribute_checks(monkeypatch):
    """The attribute values attrs.check (the Python side's one check of them) was called with."""
    calls = []
    real = attrs.check

    def counted(values, **kwargs):
        calls.append(dict(values))
        return real(values, **kwargs)

    monkeypatch.setattr(attrs, "check", counted)
    return calls


@pytest.mark.parametrize("entry", ["rms_norm", "add_rms_norm", "RMSNorm"])
def test_an_eager_forward_and_backward_checks_each_attribute_once(rng, tiling_calls, attribute_checks, entry):
    x, gamma = randn(rng, (6, 32)).requires_grad_(), randn(rng, (32,)).requires_grad_()
    if entry == "rms_norm":
        out = rms_norm(x, gamma, 1e-6, gamma_offset=0.5)
    elif entry == "add_rms_norm":
        out = sum(add_rms_norm(x, randn(rng, (6, 32)), gamma, 1e-6, gamma_offset=0.5))
    else:
        norm = RMSNorm(32, gamma_offset=0.5)
        attribute_checks.clear()  # the constructor's check, once per module, not per step
        out = norm(x)
    out.sum().backward()
    assert attribute_checks == [{"gamma_offset": 0.5}] and x.grad.shape == x.shape
    # The C++ rules: one decision, shared (the fused backward adds dres, a request of its own).
    assert tiling_calls == [[6, 32]] * (2 if entry == "add_rms_norm" else 1)


def test_a_training_loop_runs_the_tiling_once_per_shape(rng, tiling_calls):
    norm = RMSNorm(24)
    for rows in (5, 5, 5, 7, 5):
        x = randn(rng, (rows, 24)).requires_grad_()
        norm(x).sum().backward()
    assert tiling_calls == [[5, 24], [7, 24]] and norm.weight.grad.shape == (24,)


def test_a_cached_decision_is_the_searched_one_and_callers_cannot_spoil_it(rng, tiling_calls):
    shapes = {"dy": (9, 40), "x": (9, 40), "rstd": (9, 1), "gamma": (40,)}
    dtypes = {n: "float32" for n in shapes}
    first = host_tiling.tiling(shapes, dtypes)
    first["fields"]["cols"] = 0
    again = host_tiling.tiling(shapes, dtypes)
    assert tiling_calls == [[9, 40]]
    assert again == _tiling.compute_tiling(**{f"{n}_shape": list(s) for n, s in shapes.items()},
                                         **{f"{n}_dtype": "float32" for n in shapes}, soc="Ascend910B2", block_dim=0)
    assert again["fields"]["cols"] == 40


@pytest.mark.parametrize("x_dtype, gamma_dtype, message", [
    (torch.float64, torch.float32, r"^x must be float16, float32 or bfloat16 \(got float64\)\.$"),
    (torch.float16, torch.int32, r"^gamma must be float16, float32 or bfloat16 \(got int32\)\.$"),
])
def test_rms_norm_names_the_tensor_of_a_bad_dtype_without_the_tiling(tiling_calls, x_dtype, gamma_dtype, message):
    with pytest.raises(InvalidInputError, match=message):
        rms_norm(torch.ones(4, 8, dtype=x_dtype), torch.ones(8, dtype=gamma_dtype))
    assert tiling_calls == []
