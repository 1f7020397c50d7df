# SPDX-License-Identifier: BSD-3-Clause
"""Training integrations: one call puts this package's operators into a model.

    patch_model(model)            a built model, in place: every RMSNorm whose computation is known runs
                                  rms_norm (forward bitwise the family's own on CPU, backward this
                                  operator) and its decoder layers fuse the residual add into the next
                                  norm (add_rms_norm: backward with dres)
    plan(model)                   what patch_model would do to each norm and decoder layer, and why it
                                  would leave one alone
    patch_transformers(config)    the same for every transformers model built afterwards (before
                                  from_pretrained); a model type, a config, a model, or None for all
    register_norm(cls, gamma_offset=, eps_attr=, casting=)   declares how a norm class computes
    unpatch_model, unpatch_transformers   undo them

Known norms (recognise.py): transformers' classes whose forward is Llama's or Gemma's, torch.nn.RMSNorm,
registered classes. Megatron-core: megatron.py; the HF kernels hub: hf_kernels.py. Needs torch;
transformers only for the models it patches.
"""
from .classes import patch_transformers, unpatch_transformers
from .families import FAMILIES
from .hf import Entry, patch_model, plan, unpatch_model
from .recognise import NormSpec, register_norm, unregister_norm

__all__ = ["FAMILIES", "Entry", "NormSpec", "patch_model", "patch_transformers", "plan", "register_norm",
           "unpatch_model", "unpatch_transformers", "unregister_norm"]
