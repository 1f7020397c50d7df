# SPDX-License-Identifier: BSD-3-Clause
"""Documented behaviour of patch_model pinned: what it is given must be a built module, a wrong offset of
either sign is refused (a Gemma norm scales by weight + 1, not by weight - 1), and Phi3's residual
dropouts run in the patched layer as in transformers' own (train mode, a dropout that shows)."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.integrations import patch_model  # noqa: E402

from hf_models import one_thread, tiny, token_ids  # noqa: E402,F401  one_thread: an autouse fixture


@pytest.mark.parametrize("given", [None, "llama", 3])
def test_patch_model_refuses_what_is_not_a_module(given):
    with pytest.raises(InvalidInputError, match=r"^model must be a built torch.nn.Module \(got ") as caught:
        patch_model(given)
    assert f"(got {given!r})" in str(caught.value) and "patch_transformers" in str(caught.value)


@pytest.mark.parametrize("family, offset", [("gemma", -1.0), ("gemma", 2.0), ("llama", -1.0)])
def test_a_wrong_offset_of_either_sign_is_refused(rng, family, offset):
    model = tiny(family, rng)
    own = 1.0 if family == "gemma" else 0.0
    with pytest.raises(InvalidInputError, match=rf"^model.layers.0.input_layernorm is a {family} norm, which "
                                                rf"scales by weight \+ {own}: gamma_offset {offset} would train "):
        patch_model(model, gamma_offset=offset)
    assert patch_model(model, gamma_offset=own) is model


def test_an_offset_that_is_not_a_number_is_named(rng):
    with pytest.raises(InvalidInputError, match=r"^gamma_offset must be a real number \(got 'one'\)\.$"):
        patch_model(tiny("llama", rng), gamma_offset="one")


def test_phi3_residual_dropout_runs_in_the_patched_layer(rng):
    model = tiny("phi3", rng, resid_pdrop=0.5)
    patched = patch_model(copy.deepcopy(model))
    ids = token_ids(rng)
    seed = int(rng.integers(2**31))

    def logits(m, train: bool):
        torch.manual_seed(seed)  # one sequence of dropout masks for each run
        with torch.no_grad():
            return m.train(train)(ids).logits

    unpatched, ours = logits(model, True), logits(patched, True)
    shift = (unpatched - logits(model, False)).abs().max()
    # p = 0.5 moves these logits by 8 to 20 % of their largest (over 60 seeds); 1 % stays far above
    # rounding (1e-7) for any seed
    assert shift > 0.01 * unpatched.abs().max(), "the case must show its dropout"
    assert torch.equal(ours, unpatched)
