# SPDX-License-Identifier: BSD-3-Clause
"""Megatron-core's layer specs with this package's norm: built by megatron-core's own build_module, and
a whole local-spec GPT TransformerLayer forward and backward on CPU against the same layer with
Megatron's own norm. Megatron's attention makes two CUDA calls even on CPU; the test replaces them
(a CPU buffer for GlobalMemoryBuffer.get_tensor, no RNG fork: no dropout runs) and passes a mask."""
import contextlib
import copy
import importlib.util
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
# megatron-core is imported by the tests, not when pytest collects them (its import takes seconds)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("megatron") is None or
                                importlib.util.find_spec("megatron.core") is None,
                                reason="megatron-core is not installed (a test-only dependency: ./build.sh setup "
                                       "installs it)")

from rmsnorm_backward.precision import compare  # noqa: E402
from rmsnorm_backward.torch._bridge import to_numpy  # noqa: E402

from hf_models import OperatorCalls  # noqa: E402


@pytest.fixture(scope="module")
def mc():
    """megatron.core's modules the tests use, and this package's adapter (which imports them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # megatron-core warns that Transformer Engine and Apex are absent
        from megatron.core import parallel_state, tensor_parallel, utils
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.spec_utils import ModuleSpec, build_module
        from megatron.core.transformer.transformer_config import TransformerConfig

        from rmsnorm_backward.integrations import megatron
    return type("mc", (), dict(parallel_state=parallel_state, tensor_parallel=tensor_parallel, utils=utils,
                               get_gpt_layer_local_spec=staticmethod(get_gpt_layer_local_spec),
                               ModuleSpec=ModuleSpec, build_module=staticmethod(build_module),
                               TransformerConfig=TransformerConfig, ours=megatron))


@pytest.fixture(scope="module")
def model_parallel(tmp_path_factory, mc):
    import torch.distributed as dist

    store = tmp_path_factory.mktemp("megatron") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    mc.parallel_state.initialize_model_parallel(1, 1)
    yield
    mc.parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


@pytest.fixture
def cpu_attention(monkeypatch, mc):
    monkeypatch.setattr(mc.utils.GlobalMemoryBuffer, "get_tensor",
                        lambda self, shape, dtype, name, mem_alloc_context=None: torch.empty(shape, dtype=dtype))
    monkeypatch.setattr(type(mc.tensor_parallel.get_cuda_rng_tracker()), "fork",
                        lambda self, name="model-parallel-rng": contextlib.nullcontext())


def _config(mc, **kw):
    return mc.TransformerConfig(num_layers=1, hidden_size=64, num_attention_heads=4, normalization="RMSNorm",
                             use_cpu_initialization=True, layernorm_epsilon=1e-5, attention_dropout=0.0,
                             hidden_dropout=0.0, **kw)


@pytest.mark.parametrize("zero_centered", [False, True])
def test_build_module_makes_the_norm(rng, mc, zero_centered):
    config = _config(mc, layernorm_zero_centered_gamma=zero_centered, sequence_parallel=False)
    norm = mc.build_module(mc.ModuleSpec(module=mc.ours.RMSNorm), config=config, hidden_size=64, eps=1e-5)
    assert norm.gamma_offset == (1.0 if zero_centered else 0.0) and norm.weight.sequence_parallel is False
    assert torch.equal(norm.weight + norm.gamma_offset, torch.ones(64))  # a new norm scales by 1
    x = torch.from_numpy(rng.standard_normal((5, 64))).float()
    with torch.no_grad():
        norm.weight.add_(torch.from_numpy(rng.standard_normal(64)).float() * 0.1)
    expected = torch.nn.functional.rms_norm(x, (64,), norm.weight + norm.gamma_offset, 1e-5)
    torch.testing.assert_close(norm(x), expected, rtol=1e-6, atol=1e-6)


def test_a_transformer_layer_matches_megatrons_own_norm(rng, mc, model_parallel, cpu_attention):
    config = _config(mc)
    torch.manual_seed(int(rng.integers(2**31)))
    theirs = mc.build_module(mc.get_gpt_layer_local_spec(normalization="RMSNorm"), config=config, layer_number=1)
    ours = mc.build_module(mc.ours.gpt_layer_spec(), config=config, layer_number=1)
    assert type(ours.input_layernorm) is mc.ours.RMSNorm and type(ours.pre_mlp_layernorm) is mc.ours.RMSNorm
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if "layernorm" in name:
                p.add_(torch.from_numpy(rng.standard_normal(p.shape)).float() * 0.1)
    ours.load_state_dict(theirs.state_dict())
    x = torch.from_numpy(rng.standard_normal((8, 2, 64))).float()
    mask = torch.triu(torch.ones(8, 8), diagonal=1).bool()[None, None]
    dy = torch.from_numpy(rng.standard_normal((8, 2, 64))).float()
    results = []
    for layer in (theirs, ours):
        xi = copy.deepcopy(x).requires_grad_()
        with OperatorCalls() as mode:
            out, _ = layer(xi, attention_mask=mask)
            out.backward(dy)
        results.append((out.detach(), xi.grad, {n: p.grad for n, p in layer.named_parameters()}, mode.calls))
    (y, dx, grads, calls), (p_y, p_dx, p_grads, p_calls) = results
    assert not calls and p_calls["rms_norm_backward"] == 2
    assert torch.equal(p_y, y)
    for name, got, want in [("dx", p_dx, dx), *((n, p_grads[n], g) for n, g in grads.items())]:
        report = compare(to_numpy(got), want.double().numpy(), "float32")
        assert report.passed, f"{name}: {report}"
