# SPDX-License-Identifier: BSD-3-Clause
"""The reference Hugging Face transformers families: how each one's RMSNorm and decoder layer compute.

One row per family: where its classes live, the offset its norm adds to the weight, the attribute its
norm keeps eps in, its casting mode (functional.CASTINGS) and the shape of its decoder layer:
  "pre"       h = h + attn(norm1(h)); h = h + mlp(norm2(h))              (Llama; Phi3's residual dropout)
  "sandwich"  h = h + norm2(attn(norm1(h))); h = h + norm4(mlp(norm3(h)))  (Gemma2, Gemma3)
  "post"      h = h + norm1(attn(h)); h = h + norm2(mlp(h))              (OLMo2: no add is followed by
              a norm, so there is nothing to fuse; its norms alone are patched)
Read from transformers' own modeling files, the value each family's forward computes. Every other
class whose forward is one of these (recognise.py) is patched as the row it matches.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    module: str       # transformers.models.<module>.modeling_<module>
    norm: str         # the RMSNorm class
    layer: str        # the decoder layer class
    gamma_offset: float  # the norm scales by weight + gamma_offset
    eps: str          # the norm's attribute holding eps
    casting: str      # "input": the normalised x rounded before the weight (Llama); "fp32": all in fp32 (Gemma)
    form: str         # the decoder layer's shape (module docstring)
    model_types: tuple[str, ...] = ()  # config.model_type values beyond `module`

    @property
    def modeling(self) -> str:
        return f"transformers.models.{self.module}.modeling_{self.module}"


def _llama_like(module: str, prefix: str) -> Family:
    return Family(module, f"{prefix}RMSNorm", f"{prefix}DecoderLayer", 0.0, "variance_epsilon", "input", "pre")


FAMILIES = {f.module: f for f in (
    _llama_like("llama", "Llama"),
    _llama_like("mistral", "Mistral"),
    _llama_like("qwen2", "Qwen2"),
    _llama_like("qwen3", "Qwen3"),
    _llama_like("qwen3_moe", "Qwen3Moe"),
    _llama_like("deepseek_v3", "DeepseekV3"),
    _llama_like("phi3", "Phi3"),
    Family("gemma", "GemmaRMSNorm", "GemmaDecoderLayer", 1.0, "eps", "fp32", "pre"),
    Family("gemma2", "Gemma2RMSNorm", "Gemma2DecoderLayer", 1.0, "eps", "fp32", "sandwich"),
    Family("gemma3", "Gemma3RMSNorm", "Gemma3DecoderLayer", 1.0, "eps", "fp32", "sandwich", ("gemma3_text",)),
    Family("olmo2", "Olmo2RMSNorm", "Olmo2DecoderLayer", 0.0, "variance_epsilon", "fp32", "post"),
)}


def for_model_type(model_type: str) -> Family | None:
    return next((f for f in FAMILIES.values() if model_type in (f.module, *f.model_types)), None)


# Norms written otherwise that compute as a row above, bit for bit (tests/integrations/test_recognition.py
# checks each against the operator's forward): (module, class, gamma_offset, eps attribute, casting).
EQUIVALENT_NORMS = (
    ("llama4", "Llama4TextRMSNorm", 0.0, "variance_epsilon", "input"),  # Llama's, through a _norm method
    ("helium", "HeliumRMSNorm", 0.0, "variance_epsilon", "fp32"),       # OLMo2's, the weight cast first
)
