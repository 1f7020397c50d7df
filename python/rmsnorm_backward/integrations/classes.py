# SPDX-License-Identifier: BSD-3-Clause
"""patch_transformers: every transformers model built from now on (from_pretrained, from_config, the
constructors) is patched as patch_model patches a built one, when its construction ends.

transformers' models all end their __init__ with PreTrainedModel.post_init; patch_transformers wraps
it, so every family is reached, those whose modeling module is imported later too, and nothing of
transformers' own classes is replaced. RMSNorm classes it does not know and decoder layers of another
form are left alone with a warning naming the class (a model is never refused while it is built).
"""
from __future__ import annotations

import importlib
import logging

from .. import attrs
from ..errors import InvalidInputError
from . import hf, recognise

log = logging.getLogger("rmsnorm_backward.integrations")
_STATE: dict = {}  # "types": model types patched (None: all), "gamma_offset", "post_init": transformers' own


def _model_type(model_type) -> str:
    """A model type from a name, a config, or anything with a .config."""
    name = getattr(getattr(model_type, "config", model_type), "model_type", model_type)
    if not isinstance(name, str):
        raise InvalidInputError(f"patch_transformers takes a model type, a config or a model (got {model_type!r}).")
    return name


def _modeling(name: str):
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(name)
    try:
        return importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    except ImportError:
        raise InvalidInputError(f"model type {name!r} has no modeling module in the installed transformers "
                                f"(transformers.models.{module}.modeling_{module}).") from None


def norm_classes(module) -> dict[type, recognise.NormSpec | None]:
    """The RMSNorm-like classes a modeling module defines, each with how it computes (None: unknown)."""
    classes = [c for c in vars(module).values()
               if isinstance(c, type) and c.__module__ == module.__name__ and recognise.needs_patch(c)]
    return {c: recognise.norm_spec(c) for c in classes}


def _check_type(name: str, gamma_offset) -> None:
    module = _modeling(name)
    classes = norm_classes(module)
    known = {c: s for c, s in classes.items() if s is not None}
    if not known:
        raise InvalidInputError(f"model type {name!r} is not one rmsnorm_backward.integrations patches: "
                                f"{module.__name__} has no RMSNorm of a known form (Llama's, Gemma's).")
    for cls, spec in known.items():
        if gamma_offset is not None and gamma_offset != spec.gamma_offset:
            raise InvalidInputError(f"{cls.__name__} is a {spec.source} norm, which scales by weight + "
                                    f"{spec.gamma_offset}: gamma_offset {gamma_offset!r} would train a different model.")
    for cls in (c for c, s in classes.items() if s is None):
        log.warning("%s.%s is an RMSNorm rmsnorm_backward.integrations does not know: models of type %r keep it.",
                    module.__name__, cls.__qualname__, name)
    log.info("patch_transformers(%r): %s", name, ", ".join(f"{c.__name__} ({s.source})" for c, s in known.items()))


def _post_init(self, *args, **kwargs):
    _STATE["post_init"](self, *args, **kwargs)
    types = _STATE["types"]
    if types is not None and getattr(self.config, "model_type", None) not in types:
        return
    if any(isinstance(e.patched_as, recognise.NormSpec) for e in hf.plan(self)):
        hf.patch_model(self, gamma_offset=_STATE["gamma_offset"], strict=False)


def patch_transformers(model_type=None, *, gamma_offset=None) -> None:
    """Models built from now on get patched norms and decoder layers: those of `model_type` (a name, a
    config or a model, its model type checked now: refused when its modeling module has no RMSNorm of a
    known form), or of every family when None. gamma_offset, when given, is checked against the norms'
    (a wrong one is refused)."""
    import transformers

    if gamma_offset is not None:
        gamma_offset = attrs.check({"gamma_offset": gamma_offset})["gamma_offset"]
    types = None  # every model type
    if model_type is not None:
        name = _model_type(model_type)
        _check_type(name, gamma_offset)
        before = _STATE.get("types", set())  # types given to earlier calls stay patched
        types = None if before is None else {*before, name, f"{name}_text"}
    if "post_init" not in _STATE:
        _STATE["post_init"] = transformers.PreTrainedModel.post_init
        transformers.PreTrainedModel.post_init = _post_init
    _STATE.update(types=types, gamma_offset=gamma_offset)


def unpatch_transformers() -> None:
    """Undoes patch_transformers: models built from now on are transformers' own."""
    if "post_init" in _STATE:
        import transformers

        transformers.PreTrainedModel.post_init = _STATE.pop("post_init")
    _STATE.clear()
