# SPDX-License-Identifier: BSD-3-Clause
"""Tiny Hugging Face causal LMs of every family rmsnorm_backward.integrations patches (random weights
from a seeded generator, nothing downloaded), and a counter of the operators' calls."""
from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest
import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

VOCAB = 96
SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16, vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
             eos_token_id=2, tie_word_embeddings=False, rms_norm_eps=0.05)  # an eps that shows in every bit


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread while a module's tiny models run: their ops are too small to share out, and
    with a test worker per core extra threads only wait for each other (20 times slower here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# as many experts as each token takes: a routing decision near a tie would flip on a bf16-level
# difference and move a 20-step loss far more than the norms do
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
# config.model_type of each family, with what its tiny config needs beyond SMALL
MODEL_TYPES = {
    "llama": ("llama", {}),
    "mistral": ("mistral", {}),
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", {}),
    "qwen3_moe": ("qwen3_moe", dict(num_experts=2, **MOE)),
    "deepseek_v3": ("deepseek_v3", dict(n_routed_experts=2, first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=16,
                                        qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, head_dim=8, n_group=1,
                                        topk_group=1, **MOE)),
    "phi3": ("phi3", {}),
    "gemma": ("gemma", {}),
    "gemma2": ("gemma2", {}),
    "gemma3": ("gemma3_text", {}),
    "olmo2": ("olmo2", {}),
}


def config(family: str, **overrides) -> transformers.PretrainedConfig:
    model_type, extra = MODEL_TYPES[family]
    return transformers.AutoConfig.for_model(model_type, **{**SMALL, **extra, **overrides})


def tiny(family: str, rng: np.random.Generator, **overrides) -> torch.nn.Module:
    """A tiny causal LM of `family`; every norm weight drawn at random (not the 1 or 0 it starts at)."""
    torch.manual_seed(int(rng.integers(2**31)))
    model = transformers.AutoModelForCausalLM.from_config(config(family, **overrides))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(torch.from_numpy(rng.standard_normal(p.shape)).float() * 0.1)
    return model


def token_ids(rng: np.random.Generator, batch: int = 2, length: int = 8) -> torch.Tensor:
    return torch.from_numpy(rng.integers(3, VOCAB, (batch, length)))


class OperatorCalls(TorchDispatchMode):
    """Counts the calls of this package's operators (forward and backward) and those given dres."""

    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "rmsnorm_backward":
            name = func.__name__.split(".")[0]
            self.calls[name] += 1
            dres = kwargs.get("dres", args[4] if len(args) > 4 else None)
            if name == "rms_norm_backward" and dres is not None:
                self.calls["with dres"] += 1
        return func(*args, **kwargs)


def train(model, ids, autocast: bool, steps: int, seed: int = 0):
    """(first logits, first grads by name, every step's loss) of `steps` AdamW steps on `ids`, torch's
    generator seeded with `seed` first: a family with dropout in train mode draws the same masks in
    every run given the same seed."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
            out = model(ids, labels=ids)
        out.loss.backward()
        if step == 0:
            logits = out.logits.detach()
            grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        optimizer.step()
        optimizer.zero_grad()
        losses.append(out.loss.item())
    return logits, grads, torch.tensor(losses, dtype=torch.float64)


def trains_as_unpatched(model, patched, ids, steps: int) -> None:
    """The patched copy's first forward is the model's, bit for bit, and `steps` AdamW steps in fp32
    give losses within 1e-6 of each other (relative): the families' standard."""
    seed = int(torch.randint(2**31, ()).item())
    (logits, _grads, losses), (p_logits, _p_grads, p_losses) = (train(m, ids, False, steps, seed) for m in (model, patched))
    assert torch.equal(p_logits, logits)
    relative = ((p_losses - losses).abs() / losses.abs()).max().item()
    assert relative <= 1e-6, relative
