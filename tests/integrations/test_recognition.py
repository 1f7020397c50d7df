# SPDX-License-Identifier: BSD-3-Clause
"""Norms recognised by what they compute: transformers' classes whose forward is Llama's or Gemma's
(enumerated from the installed transformers), torch.nn.RMSNorm, registered classes; the rest refused
or warned about by name. The default run takes a sample of families; `pytest -m transformers_sweep`
builds a tiny model of every family it can configure."""
import copy
import importlib
import pkgutil

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.integrations import patch_model, plan, recognise, register_norm, unregister_norm  # noqa: E402
from rmsnorm_backward.integrations import patch_transformers, unpatch_transformers  # noqa: E402
from rmsnorm_backward.integrations.classes import norm_classes  # noqa: E402
from rmsnorm_backward.torch.functional import rms_norm_forward  # noqa: E402

from hf_models import SMALL, OperatorCalls, one_thread, token_ids, trains_as_unpatched  # noqa: E402,F401

STEPS = 10
# Families outside the reference list, with what their tiny config needs beyond SMALL: a pre-norm MoE
# layer, a Llama-form norm in a layer of another form (Granite's scaled residual), a dense pre-norm one
SAMPLE = {"mixtral": dict(num_local_experts=2, num_experts_per_tok=2), "granite": {}, "smollm3": {},
          "qwen2_moe": dict(num_experts=2, num_experts_per_tok=2, moe_intermediate_size=32,
                            shared_expert_intermediate_size=32)}


def _modeling_modules(names=None):
    for info in pkgutil.iter_modules(transformers.models.__path__):
        if names is None or info.name in names:
            try:
                yield importlib.import_module(f"transformers.models.{info.name}.modeling_{info.name}")
            except ImportError:
                continue


def _computes_as(cls, rng) -> str | None:
    """Which reference form (llama: "input" casting, offset 0; gemma: "fp32", offset 1; olmo2: "fp32",
    offset 0) the class's own forward gives bit for bit on random inputs: fp32, bf16, and bf16 beside an fp32
    weight (master weights), or None."""
    try:
        norm = cls(64, eps=0.05)
    except TypeError:
        return None
    if not isinstance(getattr(norm, "weight", None), torch.Tensor) or tuple(norm.weight.shape) != (64,):
        return None
    matches = set(SPECS)
    for dtype, wdtype in ((torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                          (torch.bfloat16, torch.float32)):
        with torch.no_grad():
            norm.weight.copy_(torch.from_numpy(rng.standard_normal(64)).float() * 0.5)
            w = norm.weight.to(wdtype)
            x = torch.from_numpy(rng.standard_normal((3, 64))).to(dtype)
            try:
                own = cls.forward(norm.to(wdtype), x)
            except Exception:  # a forward needing more than x (a gate, a condition) is no RMSNorm of these forms
                return None
            for name, (offset, casting) in SPECS.items():
                y = rms_norm_forward(x, w, 0.05, offset, 0, casting)[0]
                if not (y.dtype == own.dtype and torch.equal(y, own)):
                    matches.discard(name)
    return min(matches) if matches else None  # llama before olmo2: in fp32 and bf16 they differ


SPECS = {"llama": (0.0, "input"), "gemma": (1.0, "fp32"), "olmo2": (0.0, "fp32")}
# Classes that compute as a reference form only as built here: another constructor argument changes the math
OTHERWISE_CONFIGURABLE = {"Qwen4ExpTextRMSNorm": "group_size normalises groups of the row",
                          "xLSTMRMSNorm": "use_bias adds a bias, force_float32_reductions=False reduces in x's dtype"}


def _check_norm_classes(modules, rng):
    """Every RMSNorm-like class of `modules`: one computing as Llama's or Gemma's is recognised; one
    recognised computes as what it is recognised as (bit for bit, where it can be built from
    (hidden_size, eps)); one not recognised is refused by patch_model, naming it."""
    checked, missed = 0, []
    for module in modules:
        for cls, spec in norm_classes(module).items():
            form = _computes_as(cls, rng)
            if form in ("llama", "gemma") and cls.__name__ not in OTHERWISE_CONFIGURABLE and spec is None:
                missed.append(f"{cls.__qualname__} ({form})")
            if spec is not None and form is not None:
                assert (spec.gamma_offset, spec.casting) == SPECS[form], cls
                checked += 1
            if spec is None:
                holder = torch.nn.Module()
                holder.norm = cls.__new__(cls)
                torch.nn.Module.__init__(holder.norm)
                with pytest.raises(InvalidInputError, match=rf"^norm is a {module.__name__}.{cls.__qualname__}, "):
                    patch_model(holder)
    assert not missed, f"computing as Llama's or Gemma's norm but not recognised: {missed}"
    return checked


def test_sampled_transformers_norms_are_recognised_by_what_they_compute(rng):
    names = {"llama", "gemma", "olmo2", "mixtral", "granite", "smollm3", "qwen3_next", "helium", "llama4"}
    assert _check_norm_classes(list(_modeling_modules(names)), rng) >= 6


@pytest.mark.transformers_sweep
def test_every_transformers_norm_is_recognised_or_refused(rng):
    assert _check_norm_classes(list(_modeling_modules()), rng) >= 150


# A tiny model's most parameters: a family whose config keeps a full-size part SMALL cannot reach (a
# vision tower under other names, a codebook) is skipped, saying so, rather than built at full size.
MAX_PARAMETERS = 5_000_000


# Sizes a family's config may have beyond SMALL's names, set only where the config has them: few,
# small experts (as many as each token takes, so no routing decision sits near a tie).
FEWER = dict(num_experts=2, num_local_experts=2, n_routed_experts=2, num_experts_per_tok=2,
             moe_intermediate_size=32, shared_expert_intermediate_size=32)


def _shrink(config, **values) -> None:
    """`values` on `config` and every sub-config (text, vision, audio, encoder...) that has the
    attribute, at every depth: AutoConfig.for_model gives SMALL only to the top level."""
    for key, value in values.items():
        if hasattr(config, key):
            setattr(config, key, value)
    for name in getattr(config, "sub_configs", {}) or {}:
        sub = getattr(config, name, None)
        if isinstance(sub, transformers.PretrainedConfig):
            _shrink(sub, **values)


def _tiny(model_type: str, rng, **extra):
    torch.manual_seed(int(rng.integers(2**31)))
    config = transformers.AutoConfig.for_model(model_type, **{**SMALL, **extra})
    _shrink(config, **{**SMALL, **FEWER, **extra})
    with torch.device("meta"):
        size = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    if size > MAX_PARAMETERS:
        raise MemoryError(f"{size:,} parameters once SMALL is applied (at most {MAX_PARAMETERS:,})")
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(torch.from_numpy(rng.standard_normal(p.shape)).float() * 0.1)
    return model


@pytest.mark.parametrize("model_type", SAMPLE)
def test_sampled_families_train_as_unpatched(rng, model_type):
    model = _tiny(model_type, rng, **SAMPLE[model_type])
    patched = patch_model(copy.deepcopy(model))
    assert any(isinstance(e.patched_as, recognise.NormSpec) for e in plan(patched))
    trains_as_unpatched(model, patched, token_ids(rng), STEPS)


def _configurable_model_types():
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


@pytest.mark.transformers_sweep
@pytest.mark.parametrize("model_type", _configurable_model_types())
def test_every_configurable_family_trains_as_unpatched(rng, model_type):
    ids = token_ids(rng)
    try:
        model = _tiny(model_type, rng)
        with torch.no_grad():
            model(ids, labels=ids)
    except Exception as e:  # a family whose tiny model needs more than SMALL says: not one it can configure
        pytest.skip(f"{model_type}: no working tiny model from the shared config ({type(e).__name__}: "
                    f"{str(e).splitlines()[0][:120] if str(e) else ''})")
    if not any(isinstance(e.patched_as, recognise.NormSpec) for e in plan(model)):
        pytest.skip(f"{model_type} has no RMSNorm of a known form")
    patched = patch_model(copy.deepcopy(model), strict=False)
    trains_as_unpatched(model, patched, ids, STEPS)


def test_a_layer_of_another_form_keeps_its_adds_and_says_so(rng):
    model = _tiny("granite", rng)
    with pytest.warns(UserWarning, match=r"left model.layers.0 and 1 more alone: transformers.models.granite.modeling_"
                                         r"granite.GraniteDecoderLayer, a decoder layer of no known form"):
        patch_model(model)
    ids = token_ids(rng)
    with OperatorCalls() as mode:
        model(ids, labels=ids).loss.backward()
    norms = 2 * model.config.num_hidden_layers + 1
    assert mode.calls == {"rms_norm": norms, "rms_norm_backward": norms}


def test_patch_transformers_reaches_every_family(rng):
    patch_transformers()
    try:
        olmo2 = _tiny("olmo2", rng)
        mixtral = _tiny("mixtral", rng, **SAMPLE["mixtral"])
    finally:
        unpatch_transformers()
    assert type(olmo2.model.norm).patched_as.casting == "fp32"
    assert all(type(m).patched_as == "pre" for m in mixtral.model.layers)
    assert not hasattr(_tiny("mixtral", rng, **SAMPLE["mixtral"]).model.norm, "patched_as")


def _torch_model(rng):
    torch.manual_seed(int(rng.integers(2**31)))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.RMSNorm(32), torch.nn.Linear(32, 32),
                                torch.nn.RMSNorm([4, 8], eps=1e-3), torch.nn.Flatten(),
                                torch.nn.RMSNorm(32, elementwise_affine=False), torch.nn.Linear(32, 1))
    with torch.no_grad():
        for norm in (model[1], model[3]):
            norm.weight.add_(torch.from_numpy(rng.standard_normal(norm.weight.shape)).float() * 0.1)
    return model


class _Unflatten(torch.nn.Module):
    def forward(self, x):
        return x.unflatten(-1, (4, 8))


def test_a_plain_torch_model_of_rmsnorms_trains_as_unpatched(rng):
    model = _torch_model(rng)
    model.insert(3, _Unflatten())
    patched = patch_model(copy.deepcopy(model))
    x = torch.from_numpy(rng.standard_normal((8, 16))).float()
    target = torch.from_numpy(rng.standard_normal((8, 1))).float()
    losses = []
    for m in (model, patched):
        optimizer = torch.optim.AdamW(m.parameters(), lr=1e-2)
        run = []
        for _ in range(STEPS):
            loss = torch.nn.functional.mse_loss(m(x), target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            run.append(loss.item())
        losses.append(torch.tensor(run, dtype=torch.float64))
    with OperatorCalls() as mode:
        patched(x).sum().backward()
    assert mode.calls == {"rms_norm": 3, "rms_norm_backward": 3}
    assert losses[1][0] == losses[0][0]  # the first forward, bit for bit
    assert ((losses[1] - losses[0]).abs() / losses[0].abs()).max().item() <= 1e-5


def test_a_registered_class_is_patched_and_checked():
    class ScaledNorm(torch.nn.Module):  # not named like a norm: only register_norm makes it one
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.rand(16) - 0.5)
            self.epsilon = 1e-5

        def forward(self, x):
            rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.epsilon)
            return ((x.float() * rstd) * (1.0 + self.weight.float())).to(x.dtype)

    holder = torch.nn.Sequential(torch.nn.Linear(16, 16), ScaledNorm())
    try:
        register_norm(ScaledNorm, gamma_offset=0.0, eps_attr="epsilon")  # wrong: it scales by 1 + w
        with pytest.raises(InvalidInputError, match=r"ScaledNorm does not compute what registered .*ScaledNorm's norm"):
            patch_model(holder)
        assert not hasattr(holder[1], "patched_as")
        register_norm(ScaledNorm, gamma_offset=1.0, eps_attr="epsilon")
        x = torch.randn(4, 16)
        expected = holder(x)
        patch_model(holder)
        assert torch.equal(holder(x), expected) and holder[1].patched_as.gamma_offset == 1.0
    finally:
        unregister_norm(ScaledNorm)
    with pytest.raises(InvalidInputError, match=r"^casting must be one of fp32, input \(got 'bf16'\)\.$"):
        register_norm(ScaledNorm, casting="bf16")
