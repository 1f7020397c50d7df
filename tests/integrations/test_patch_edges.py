# SPDX-License-Identifier: BSD-3-Clause
"""A patched model on the meta device, through torch.save and pickling, behind FSDP2's, DDP's and
torch.compile's wrappers; a dtype the operators do not take refused when patching, naming the module."""
import copy
import io
import pickle

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.integrations import patch_model, plan, unpatch_model  # noqa: E402

from hf_models import OperatorCalls, config, one_thread, tiny, token_ids  # noqa: E402,F401


def test_a_patched_model_runs_on_the_meta_device(rng):
    import transformers

    with torch.device("meta"):
        model = patch_model(transformers.AutoModelForCausalLM.from_config(config("gemma2")))
    ids = token_ids(rng).to("meta")
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast on for another device: meta has none
        logits = model(ids).logits
    assert logits.device.type == "meta" and logits.shape == (*ids.shape, model.config.vocab_size)
    assert model.model.layers[0].patched_as == "sandwich"


@pytest.mark.parametrize("how", ["torch.save", "pickle"])
def test_a_patched_model_pickles_as_itself(rng, how):
    model = patch_model(tiny("qwen3", rng))
    ids = token_ids(rng)
    with torch.no_grad():
        expected = model(ids).logits
    if how == "torch.save":
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)
    else:  # what multiprocessing's spawn does to a model it hands a child process
        loaded = pickle.loads(pickle.dumps(model))
    assert type(loaded.model.norm) is type(model.model.norm) and type(loaded.model.norm).__name__ == "Qwen3RMSNorm"
    with OperatorCalls() as mode, torch.no_grad():
        assert torch.equal(loaded(ids).logits, expected)
    assert mode.calls["add_rms_norm"] == model.config.num_hidden_layers
    assert type(unpatch_model(loaded).model.norm).__name__ == "Qwen3RMSNorm"


def test_a_float64_model_is_refused_when_patched(rng):
    model = tiny("llama", rng).double()
    classes = [type(m) for m in model.modules()]
    with pytest.raises(InvalidInputError, match=r"^model.layers.0.input_layernorm has a float64 weight: "
                                                r"rmsnorm_backward's operators take float16, bfloat16 and float32"):
        patch_model(model)
    assert [type(m) for m in model.modules()] == classes  # nothing half patched


def test_wrappers_are_seen_through(rng, tmp_path):
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel

    model = tiny("llama", rng)
    ids = token_ids(rng)
    with torch.no_grad():
        expected = model(ids).logits
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        sharded = copy.deepcopy(model)
        for layer in sharded.model.layers:
            fully_shard(layer)
        fully_shard(sharded)
        patch_model(sharded)  # fully_shard first: its FSDP<Layer> classes are subclassed as they are
        assert all(type(layer).__name__ == "FSDPLlamaDecoderLayer" and layer.patched_as == "pre"
                   for layer in sharded.model.layers)
        wrapped = DistributedDataParallel(copy.deepcopy(model))
        compiled = torch.compile(copy.deepcopy(model), backend="eager")
        for m in (wrapped, compiled):
            assert {e.patched_as for e in plan(m)} == {e.patched_as for e in plan(model)}
            patch_model(m)
        for m in (sharded, wrapped, compiled):
            with OperatorCalls() as mode:
                logits = m(ids).logits
            assert mode.calls["add_rms_norm"] == model.config.num_hidden_layers
            torch.testing.assert_close(logits.detach(), expected, rtol=0, atol=0)
    finally:
        dist.destroy_process_group()
