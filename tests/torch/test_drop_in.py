# SPDX-License-Identifier: BSD-3-Clause
"""RMSNorm as a torch.nn.RMSNorm drop-in: torch's own ModuleInfo samples for nn.RMSNorm and OpInfo samples
for nn.functional.rms_norm (a negative eps among them), the
constructor's positional forms, eps=None, no weight, a normalized_shape that is all of x's shape, and
the autocast rule; every form through opcheck and torch.compile(fullgraph=True).

The golden of a sample is torch.nn.RMSNorm itself run in float64 on the same inputs and weight.
"""
import copy
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("expecttest", reason="torch.testing._internal needs expecttest (pip install expecttest)")

from torch.testing._internal.common_modules import module_db  # noqa: E402

from rmsnorm_backward.torch import RMSNorm, rms_norm  # noqa: E402

from torch_helpers import DTYPES, assert_precise, randn  # noqa: E402

(MODULE_INFO,) = [m for m in module_db if m.module_cls is torch.nn.RMSNorm]


def samples():
    """(desc, constructor args, kwargs, x shape) of each ModuleInfo sample (inputs are drawn anew)."""
    made = MODULE_INFO.module_inputs_func(MODULE_INFO, device="cpu", dtype=torch.float32, requires_grad=True,
                                          training=True)
    return [pytest.param(s.constructor_input.args, s.constructor_input.kwargs, tuple(s.forward_input.args[0].shape),
                         id=s.desc) for s in made]


def run(module, x, dy):
    """(y, x.grad, weight.grad or None) of module on a fresh leaf copy of x."""
    x = x.detach().clone().requires_grad_()
    y = module(x)
    y.backward(dy)
    weight = module.weight
    return y.detach(), x.grad, None if weight is None else weight.grad


def twins(args, kwargs, rng, dtype):
    """Our RMSNorm and torch's built alike in `dtype`, sharing one random weight (when they have one)."""
    ours, theirs = RMSNorm(*args, **kwargs, dtype=dtype), torch.nn.RMSNorm(*args, **kwargs, dtype=dtype)
    if ours.weight is not None:
        with torch.no_grad():
            ours.weight.copy_(randn(rng, ours.weight.shape, dtype))
        theirs.load_state_dict(ours.state_dict())
    return ours, theirs


def assert_like_torch_float64(ours, theirs, x, dy):
    """Ours in x's dtype against torch's module in float64 (the golden), by the precision standard,
    after the same dtypes, shapes and parameters as torch's module in x's dtype."""
    got, same_dtype = run(ours, x, dy), run(theirs, x, dy)
    for a, b in zip(got, same_dtype):
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.dtype, a.shape) == (b.dtype, b.shape)
    reference = copy.deepcopy(theirs).double()
    if reference.eps is None:  # the epsilon of x's dtype, as the module in x's dtype uses
        reference.eps = torch.finfo(x.dtype).eps
    golden = run(reference, x.double(), dy.double())
    for what, a, g in zip(("y", "dx", "dweight"), got, golden):
        if a is not None:
            assert_precise(a, g, what=what, round_golden=not (what == "dweight" and a.dtype != torch.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("args", "kwargs", "x_shape"), samples())
def test_torch_module_info_samples(rng, args, kwargs, x_shape, dtype):
    dtype = DTYPES[dtype]
    ours, theirs = twins(args, kwargs, rng, dtype)
    assert repr(ours) == repr(theirs) and dict(ours.named_parameters()).keys() == dict(theirs.named_parameters()).keys()
    assert_like_torch_float64(ours, theirs, randn(rng, x_shape, dtype), randn(rng, x_shape, dtype))


def op_samples():
    """(normalized_shape, has weight, eps kwargs, x shape) of each OpInfo sample of
    torch.nn.functional.rms_norm (one with eps=-0.5, which torch accepts: the formula decides)."""
    from torch.testing._internal.common_methods_invocations import op_db

    (info,) = [o for o in op_db if o.name == "nn.functional.rms_norm"]
    made = info.sample_inputs("cpu", torch.float32, requires_grad=True)
    return [pytest.param(tuple(s.args[0]), len(s.args) > 1, dict(s.kwargs), tuple(s.input.shape),
                         id=f"{list(s.input.shape)}-{list(s.args[0])}-{len(s.args) > 1}-{s.kwargs}") for s in made]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("normalized_shape", "weight", "kwargs", "x_shape"), op_samples())
def test_torch_op_info_samples_through_the_module(rng, normalized_shape, weight, kwargs, x_shape, dtype):
    dtype = DTYPES[dtype]
    ours, theirs = twins((normalized_shape,), {**kwargs, "elementwise_affine": weight}, rng, dtype)
    assert ours.eps == theirs.eps == kwargs.get("eps")
    assert_like_torch_float64(ours, theirs, randn(rng, x_shape, dtype), randn(rng, x_shape, dtype))


@pytest.mark.parametrize(("args", "kwargs", "x_shape"), [
    pytest.param((7,), {}, (7,), id="1d-input-eps-none"),
    pytest.param(((3, 40),), {"eps": None}, (3, 40), id="normalized-shape-is-x-shape"),
    pytest.param(([64], None, False), {}, (5, 64), id="eps-none-no-weight"),
    pytest.param((48,), {"elementwise_affine": False, "eps": 1e-5}, (48,), id="1d-input-no-weight"),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forms_torch_has_and_the_operator_did_not(rng, args, kwargs, x_shape, dtype):
    dtype = DTYPES[dtype]
    ours, theirs = twins(args, kwargs, rng, dtype)
    assert_like_torch_float64(ours, theirs, randn(rng, x_shape, dtype), randn(rng, x_shape, dtype))


def test_eps_none_is_the_machine_epsilon_of_x(rng):
    x = randn(rng, (4, 32), torch.float16) * 1e-3  # small enough for eps to matter
    y = RMSNorm(32)(x)
    ref = x.double() * torch.rsqrt(x.double().square().mean(-1, keepdim=True) + torch.finfo(torch.float16).eps)
    assert_precise(y.detach(), ref, what="y")


def _fp32_list_of_torch_autocast() -> list[str]:
    header = Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"
    block = re.search(r"#define AT_FORALL_FP32\(_\)(.*?)\n\n", header.read_text(), re.S)
    return re.findall(r"_\((\w+)\)", block.group(1))


def test_the_autocast_rule_is_torchs_rule_for_rms_norm():
    assert "rms_norm" in _fp32_list_of_torch_autocast()  # torch's autocast computes rms_norm in float32


@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16", "float32"])
def test_under_autocast_it_computes_in_float32_and_grads_keep_the_storage_dtype(rng, x_dtype):
    x_dtype = DTYPES[x_dtype]
    norm = RMSNorm(96)
    with torch.no_grad():
        norm.weight.copy_(randn(rng, (96,)))
    x, dy = randn(rng, (6, 96), x_dtype), randn(rng, (6, 96))
    leaf = x.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = norm(leaf)
    y.backward(dy)
    fp32 = x.float().requires_grad_()
    want = rms_norm(fp32, norm.weight.detach().clone().requires_grad_(), torch.finfo(torch.float32).eps)
    want.backward(dy)
    assert y.dtype == torch.float32 and leaf.grad.dtype == x_dtype and norm.weight.grad.dtype == torch.float32
    torch.testing.assert_close(y, want.detach(), rtol=0, atol=0)
    torch.testing.assert_close(leaf.grad, fp32.grad.to(x_dtype), rtol=0, atol=0)


def test_the_backward_operator_under_autocast_runs_in_float32(rng):
    x = randn(rng, (5, 40), torch.bfloat16)
    rstd = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
    args = (randn(rng, (5, 40), torch.bfloat16), x, rstd, randn(rng, (40,), torch.bfloat16))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        dx, dgamma = torch.ops.rmsnorm_backward.rms_norm_backward(*args)
    want_dx, want_dgamma = torch.ops.rmsnorm_backward.rms_norm_backward(*(t.float() for t in args))
    assert dx.dtype == torch.float32
    torch.testing.assert_close((dx, dgamma), (want_dx, want_dgamma), rtol=0, atol=0)


@pytest.mark.parametrize(("x", "gamma", "eps"), [
    pytest.param((4, 24), (24,), None, id="eps-none"),
    pytest.param((1, 24), (24,), 1e-3, id="one-row"),
    pytest.param((4, 24), None, 1e-3, id="ones-gamma"),
])
def test_opcheck_of_every_new_form(rng, x, gamma, eps):
    x_t = randn(rng, x).requires_grad_()
    gamma_t = (torch.ones(x[-1:]) if gamma is None else randn(rng, gamma)).requires_grad_(gamma is not None)
    torch.library.opcheck(torch.ops.rmsnorm_backward.rms_norm, (x_t, gamma_t, eps))


@pytest.mark.parametrize(("args", "x_shape", "autocast"), [
    pytest.param(([5], 1e-3, False), (3, 4, 5), False, id="positional-no-weight"),
    pytest.param((16,), (16,), False, id="1d-input-eps-none"),
    pytest.param((16,), (3, 16), True, id="autocast"),
])
def test_compiled_fullgraph_matches_eager(rng, args, x_shape, autocast):
    eager = RMSNorm(*args)
    compiled_module = copy.deepcopy(eager)
    compiled = torch.compile(compiled_module, fullgraph=True, backend="aot_eager")
    x, dy = randn(rng, x_shape, torch.bfloat16 if autocast else torch.float32), randn(rng, x_shape)
    results = []
    for model in (eager, compiled):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            results.append(run(model, x, dy))
    for e, c in zip(*results):
        assert (e is None) == (c is None)
        if e is not None:
            torch.testing.assert_close(c, e, rtol=0, atol=0)
