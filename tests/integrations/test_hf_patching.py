# SPDX-License-Identifier: BSD-3-Clause
"""What patching keeps and what it refuses: the same module and Parameter objects (optimizer state,
tied weights, state dicts, save_pretrained / from_pretrained), class patching before from_pretrained,
and one sentence for a norm class it does not know, a wrong offset or a model type it does not patch."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.integrations import patch_model, patch_transformers, unpatch_model, unpatch_transformers  # noqa: E402

from hf_models import OperatorCalls, one_thread, config, tiny, token_ids  # noqa: E402,F401  one_thread: an autouse fixture


@pytest.fixture
def patched_classes():
    yield patch_transformers
    unpatch_transformers()


def test_patching_keeps_every_parameter_and_the_optimizer_state(rng):
    model = tiny("llama", rng, tie_word_embeddings=True)
    ids = token_ids(rng)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(ids, labels=ids).loss.backward()
    optimizer.step()
    before = dict(model.named_parameters())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    norm = model.model.norm
    patch_model(model)
    assert model.model.norm is norm and type(norm).__name__ == "LlamaRMSNorm"
    assert all(p is before[n] for n, p in model.named_parameters())
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    optimizer.zero_grad()
    model(ids, labels=ids).loss.backward()
    optimizer.step()  # the optimizer's state is keyed by the same Parameters: its second step
    assert all(s["step"].item() == 2 for s in optimizer.state.values())
    unpatch_model(model)
    assert type(model.model.norm) is transformers.models.llama.modeling_llama.LlamaRMSNorm


def test_classes_patched_before_from_pretrained(rng, tmp_path, patched_classes):
    model = tiny("gemma2", rng)
    ids = token_ids(rng)
    with torch.no_grad():
        expected = model(ids).logits
    patch_model(model).save_pretrained(tmp_path)  # a patched model saves what the unpatched one would
    patched_classes(model.config)  # the config-driven entry: the family of config.model_type
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    with OperatorCalls() as mode, torch.no_grad():
        logits = loaded(ids).logits
    assert torch.equal(logits, expected)
    assert mode.calls["add_rms_norm"] == loaded.config.num_hidden_layers
    unpatch_transformers()
    fresh = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert not hasattr(fresh.model.norm, "patched_as")


def test_patching_every_family_reaches_every_norm(patched_classes):
    patched_classes()
    model = transformers.AutoModelForCausalLM.from_config(config("qwen3"))
    assert model.model.layers[0].self_attn.q_norm.patched_as.source == "llama"  # Qwen3's norm computes as Llama's


def test_an_unknown_norm_class_is_refused(rng):
    class MyRMSNorm(torch.nn.Module):
        def forward(self, x):
            return x

    model = tiny("llama", rng)
    model.model.layers[1].extra_norm = MyRMSNorm()
    untouched = copy.deepcopy(model)
    with pytest.raises(InvalidInputError) as e:
        patch_model(model)
    assert str(e.value).startswith("model.layers.1.extra_norm is a test_hf_patching.")
    assert "MyRMSNorm, a norm class rmsnorm_backward.integrations does not know" in str(e.value)
    assert [type(m) for m in model.modules()] == [type(m) for m in untouched.modules()]  # nothing half patched


@pytest.mark.parametrize("family, offset", [("gemma", 0.0), ("llama", 1.0)])
def test_a_wrong_gamma_offset_is_refused(rng, family, offset):
    model = tiny(family, rng)
    with pytest.raises(InvalidInputError, match=rf"^model.layers.0.input_layernorm is a {family} norm, which "
                                                rf"scales by weight \+ {1.0 - offset}: gamma_offset {offset} would train "
                                                "a different model.$"):
        patch_model(model, gamma_offset=offset)
    with pytest.raises(InvalidInputError, match=rf"is a {family} norm"):
        patch_transformers(family, gamma_offset=offset)
    patch_model(model, gamma_offset=1.0 - offset)  # the family's own is accepted


def test_a_model_type_it_does_not_patch_is_refused():
    with pytest.raises(InvalidInputError, match=r"^model type 'bert' is not one rmsnorm_backward.integrations "
                                                r"patches: transformers.models.bert.modeling_bert has no RMSNorm "
                                                r"of a known form"):
        patch_transformers("bert")
    with pytest.raises(InvalidInputError, match=r"^Linear has no RMSNorm rmsnorm_backward.integrations patches"):
        patch_model(torch.nn.Linear(2, 2))


def test_compiled_and_checkpointed_patched_models_match_eager(rng):
    model = patch_model(tiny("qwen3", rng))
    ids = token_ids(rng)
    checkpointed = copy.deepcopy(model)
    checkpointed.gradient_checkpointing_enable()
    compiled = copy.deepcopy(model)
    runs = []
    for run, m in ((model, model), (torch.compile(compiled, backend="aot_eager", fullgraph=True), compiled),
                   (checkpointed, checkpointed)):
        loss = run(ids, labels=ids).loss
        loss.backward()
        runs.append((loss.detach(), {n: p.grad for n, p in m.named_parameters()}))
    (loss, grads), *others = runs
    for other_loss, other_grads in others:
        assert torch.equal(other_loss, loss)
        for name, g in grads.items():
            torch.testing.assert_close(other_grads[name], g, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_generation_with_a_cache_matches(rng, family):
    model = tiny(family, rng)
    ids = token_ids(rng, batch=1)
    expected = model.generate(ids, max_new_tokens=4, do_sample=False, use_cache=True)
    patch_model(model)
    assert torch.equal(model.generate(ids, max_new_tokens=4, do_sample=False, use_cache=True), expected)


def test_norms_alone_without_the_fused_residual(rng):
    model = tiny("mistral", rng)
    ids = token_ids(rng)
    with torch.no_grad():
        expected = model(ids).logits
        patch_model(model, fuse_residual=False)
        with OperatorCalls() as mode:
            assert torch.equal(model(ids).logits, expected)
    assert mode.calls == {"rms_norm": 2 * model.config.num_hidden_layers + 1}
    assert not hasattr(model.model.layers[0], "family")
