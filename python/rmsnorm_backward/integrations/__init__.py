# SPDX-License-Identifier: BSD-3-Clause
"""Training integrations: one call puts this package's operators into a Hugging Face model.

    patch_model(model)            a built model, in place: its RMSNorms run rms_norm (forward bitwise the
                                  family's own on CPU, backward this operator) and its decoder layers
                                  fuse the residual add into the next norm (add_rms_norm: backward with dres)
    patch_transformers(config)    the same for every model built afterwards (before from_pretrained);
                                  a model type, a config, a model, or None for every family
    unpatch_model, unpatch_transformers   undo them

Families: FAMILIES (families.py). Needs torch; transformers only for the models it patches.
"""
from .families import FAMILIES
from .hf import patch_model, patch_transformers, unpatch_model, unpatch_transformers

__all__ = ["FAMILIES", "patch_model", "patch_transformers", "unpatch_model", "unpatch_transformers"]
