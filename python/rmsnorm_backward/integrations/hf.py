# SPDX-License-Identifier: BSD-3-Clause
"""Patching Hugging Face transformers models: their RMSNorm modules run this package's operators and
their decoder layers route the residual add into the next norm (add_rms_norm, backward with dres).

A patched module is the same object with a subclass of its own class: the weight Parameter, its
optimizer state, tied references, hooks, state_dict keys and save_pretrained / from_pretrained stay
as they were; the subclass keeps the class's name (FSDP wrap policies and `_no_split_modules` match
by name) and adds only `forward`.
"""
from __future__ import annotations

import importlib
import inspect

from ..errors import InvalidInputError
from . import forwards
from .families import FAMILIES, Family, for_model_type

_SUBCLASSES: dict[type, type] = {}        # a family's class -> its patched subclass
_REPLACED: dict[tuple[str, str], type] = {}  # (modeling module, class name) -> the class patch_transformers replaced


def _modeling(family: Family):
    """The family's modeling module, or None where the installed transformers has no such family."""
    try:
        return importlib.import_module(family.modeling)
    except ImportError:
        return None


def _original(cls: type) -> type:
    return cls.__dict__.get("hf_class", cls)


def _subclass(cls: type, family: Family, role: str) -> type:
    cls = _original(cls)
    if cls not in _SUBCLASSES:
        body = {"family": family, "hf_class": cls, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        if role == "norm":
            body["forward"] = forwards.norm_forward
        else:
            body["forward"] = forwards.LAYER_FORWARDS[family.form]
            body["hf_signature"] = inspect.signature(cls.forward)
        _SUBCLASSES[cls] = type(cls.__name__, (cls,), body)
    return _SUBCLASSES[cls]


def _families(model_type) -> list[Family]:
    """All families, or the one of a model type (a name, a config, or anything with a .config)."""
    if model_type is None:
        return list(FAMILIES.values())
    name = getattr(getattr(model_type, "config", model_type), "model_type", model_type)
    family = for_model_type(name)
    if family is None:
        raise InvalidInputError(f"model type {name!r} is not one rmsnorm_backward.integrations patches "
                                f"(it patches {', '.join(FAMILIES)}).")
    if _modeling(family) is None:
        raise InvalidInputError(f"model type {name!r} needs {family.modeling}, which the installed transformers "
                                "does not have.")
    return [family]


def _check_gamma_offset(family: Family, gamma_offset, where: str) -> None:
    if gamma_offset is not None and float(gamma_offset) != family.gamma_offset:
        raise InvalidInputError(f"{where} is a {family.module} norm, which scales by weight + {family.gamma_offset}: "
                                f"gamma_offset {gamma_offset!r} would train a different model.")


def patch_transformers(model_type=None, *, gamma_offset=None) -> None:
    """Models built from now on (from_pretrained, from_config, the constructors) get patched norms and
    decoder layers: those of `model_type` (a name, a config or a model; every family when None).
    gamma_offset, when given, is checked against the family's (a wrong one is refused)."""
    families = [(f, _modeling(f)) for f in _families(model_type)]
    families = [(f, module) for f, module in families if module is not None]
    for family, _module in families:  # all checked before any is patched
        _check_gamma_offset(family, gamma_offset, family.norm)
    for family, module in families:
        for name, role in ((family.norm, "norm"), (family.layer, "layer")):
            current = getattr(module, name)
            _REPLACED.setdefault((module.__name__, name), _original(current))
            setattr(module, name, _subclass(current, family, role))


def unpatch_transformers() -> None:
    """Undoes patch_transformers: models built from now on are transformers' own."""
    for (module, name), cls in _REPLACED.items():
        setattr(importlib.import_module(module), name, cls)
    _REPLACED.clear()


def _known() -> dict[type, tuple[Family, str]]:
    known = {}
    for family in FAMILIES.values():
        module = _modeling(family)
        if module is not None:
            known[_original(getattr(module, family.norm))] = (family, "norm")
            known[_original(getattr(module, family.layer))] = (family, "layer")
    return known


def patch_model(model, *, gamma_offset=None, fuse_residual: bool = True):
    """Patches a built model in place and returns it: every RMSNorm of a known family runs this
    package's operators, and (fuse_residual) every decoder layer routes its residual add into the
    next norm. Refuses, before changing anything, an RMSNorm class it does not know and a `gamma_offset`
    that is not the family's."""
    known = _known()
    plan = []
    for name, module in model.named_modules():
        cls = _original(type(module))
        if cls in known:
            family, role = known[cls]
            if role == "norm":
                _check_gamma_offset(family, gamma_offset, name or type(model).__name__)
            if role == "norm" or fuse_residual:
                plan.append((module, _subclass(cls, family, role)))
        elif "rmsnorm" in cls.__name__.lower() and not cls.__module__.startswith("rmsnorm_backward."):
            raise InvalidInputError(f"{name} is a {cls.__module__}.{cls.__qualname__}, a norm class "
                                    "rmsnorm_backward.integrations does not know, so its gamma_offset and eps cannot be "
                                    f"read (it patches the families {', '.join(FAMILIES)}).")
    if not plan:
        raise InvalidInputError(f"{type(model).__name__} has no RMSNorm of a family rmsnorm_backward.integrations "
                                f"patches ({', '.join(FAMILIES)}).")
    for module, subclass in plan:
        module.__class__ = subclass
    return model


def unpatch_model(model):
    """Undoes patch_model in place and returns the model."""
    for module in model.modules():
        module.__class__ = _original(type(module))
    return model
