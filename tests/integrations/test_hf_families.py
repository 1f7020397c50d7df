# SPDX-License-Identifier: BSD-3-Clause
"""Every family rmsnorm_backward.integrations patches, patched against unpatched (tiny models, random
weights): 20 AdamW steps in fp32 and under bf16 autocast give the same first forward bit for bit and
the same losses and gradients within the precision standard; the residual adds of the decoder layers
go through add_rms_norm, whose backward passes dres."""
import copy
from collections import Counter

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")

from rmsnorm_backward.integrations import FAMILIES, patch_model  # noqa: E402
from rmsnorm_backward.integrations.recognise import FUSED_FORMS  # noqa: E402
from rmsnorm_backward.precision import compare  # noqa: E402
from rmsnorm_backward.torch._bridge import to_numpy  # noqa: E402

from hf_models import OperatorCalls, one_thread, tiny, token_ids, train  # noqa: E402,F401  one_thread: an autouse fixture

STEPS = 20


@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16_autocast"])
@pytest.mark.parametrize("family", FAMILIES)
def test_patched_trains_as_unpatched(rng, family, autocast):
    model = tiny(family, rng)
    ids = token_ids(rng)
    patched = patch_model(copy.deepcopy(model))
    (logits, grads, losses), (p_logits, p_grads, p_losses) = (train(m, ids, autocast, STEPS) for m in (model, patched))
    assert torch.equal(p_logits, logits)
    assert grads.keys() == p_grads.keys()
    standard = torch.bfloat16 if autocast else torch.float32  # the standard of the dtype the math ran in
    for name, g in grads.items():
        report = compare(to_numpy(p_grads[name].to(standard)), g.double().numpy(), str(standard)[6:])
        assert report.passed, f"{name}: {report}"
    relative = ((p_losses - losses).abs() / losses.abs()).max().item()
    assert relative <= (4e-3 if autocast else 1e-6), relative


@pytest.mark.parametrize("family", FAMILIES)
def test_residual_adds_go_through_add_rms_norm(rng, family):
    model = tiny(family, rng)
    norm_class = type(model.model.norm)
    norms = sum(isinstance(m, norm_class) for m in model.modules())
    layers = model.config.num_hidden_layers
    patch_model(model)
    ids = token_ids(rng)
    with OperatorCalls() as mode:
        model(ids, labels=ids).loss.backward()
    # one norm per layer takes the residual add with it (none in a post-norm layer); every norm's
    # backward is one operator call, those fused with an add given the residual stream's gradient
    fused = layers if FAMILIES[family].form in FUSED_FORMS else 0
    assert mode.calls == Counter({"add_rms_norm": fused, "rms_norm": norms - fused, "rms_norm_backward": norms,
                                  "with dres": fused})


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_forward_is_bitwise(rng, family):
    model = tiny(family, rng).to(torch.bfloat16)
    ids = token_ids(rng)
    with torch.no_grad():
        expected = model(ids).logits
        assert torch.equal(patch_model(model)(ids).logits, expected)
