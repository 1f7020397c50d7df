# SPDX-License-Identifier: BSD-3-Clause
"""Patching built models: their RMSNorm modules run this package's operators and their decoder layers
route the residual add into the next norm (add_rms_norm, backward with dres).

A patched module is the same object with a subclass of its own class: the weight Parameter, its
optimizer state, tied references, hooks, state_dict keys and save_pretrained / from_pretrained stay
as they were; the subclass keeps the class's name (FSDP wrap policies and `_no_split_modules` match
by name), adds `forward` and pickles as itself (torch.save, spawn). Wrappers are seen through: DDP's
and torch.compile's hold the model as a submodule, and FSDP2's class (FSDP<Layer>) is subclassed as
it is, so the layer stays sharded.
"""
from __future__ import annotations

import inspect
import logging
import warnings
from collections import Counter
from dataclasses import dataclass

import torch

from .. import attrs
from ..errors import InvalidInputError
from . import forwards, recognise
from .recognise import NormSpec

log = logging.getLogger("rmsnorm_backward.integrations")
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_SUBCLASSES: dict[tuple, type] = {}  # (class patched, NormSpec or layer form) -> its patched subclass


def _original(cls: type) -> type:
    return cls.__dict__.get("patched_from", cls)


def _rebuild(base: type, patched_as) -> torch.nn.Module:
    """Unpickling: an empty instance of the patched subclass (the module's state is set after)."""
    return object.__new__(_subclass(base, patched_as))


def _reduce_ex(self, protocol):
    _new, _args, *rest = object.__reduce_ex__(self, protocol)
    cls = type(self)
    return (_rebuild, (cls.patched_from, cls.patched_as), *rest)


def _subclass(cls: type, patched_as) -> type:
    """The patched subclass of `cls`: a norm for a NormSpec, a decoder layer for a form."""
    cls = _original(cls)
    key = (cls, patched_as)
    if key not in _SUBCLASSES:
        body = {"patched_from": cls, "patched_as": patched_as, "__module__": cls.__module__,
                "__qualname__": cls.__qualname__, "__reduce_ex__": _reduce_ex}
        if isinstance(patched_as, NormSpec):
            body["forward"] = forwards.norm_forward
        else:
            body["forward"] = forwards.LAYER_FORWARDS[patched_as]
            body["hf_signature"] = inspect.signature(cls.forward)
        _SUBCLASSES[key] = type(cls.__name__, (cls,), body)
    return _SUBCLASSES[key]


@dataclass(frozen=True)
class Entry:
    """What patch_model does to one module: `patched_as` a NormSpec (a norm) or a layer form, or None
    with `reason` (left alone)."""
    name: str
    cls: str
    patched_as: object
    reason: str = ""


def _is_layer_of_norms(cls: type, module) -> bool:
    """A decoder layer holding RMSNorms of its own."""
    return cls.__name__.endswith("DecoderLayer") and any(recognise.needs_patch(_original(type(c)))
                                                        for c in module.children())


def _weight_dtype(module) -> torch.dtype | None:
    weight = getattr(module, "weight", None)
    return weight.dtype if isinstance(weight, torch.Tensor) else None


def plan(model: torch.nn.Module, *, fuse_residual: bool = True) -> list[Entry]:
    """What patch_model(model) would do, module by module: every norm and decoder layer it patches,
    and every RMSNorm-like module or decoder layer it leaves alone with the reason. Changes nothing."""
    if not isinstance(model, torch.nn.Module):
        raise InvalidInputError(f"model must be a built torch.nn.Module (got {model!r:.60}); "
                                "to patch a model type before it is built, use patch_transformers.")
    entries = []
    for name, module in model.named_modules():
        cls = _original(type(module))
        where, label = name or type(model).__name__, f"{cls.__module__}.{cls.__qualname__}"
        if recognise.needs_patch(cls):
            spec = recognise.norm_spec(cls)
            reason = "" if spec else ("a norm class rmsnorm_backward.integrations does not know, so its gamma offset "
                                      "and eps cannot be read (register_norm declares them; strict=False leaves it "
                                      "alone)")
            entries.append(Entry(where, label, spec, reason))
        elif recognise.layer_form(cls) is not None or _is_layer_of_norms(cls, module):
            form = recognise.layer_form(cls)
            if not fuse_residual:
                reason = "fuse_residual=False: its norms only"
            elif form == "post":
                reason = "a post-norm layer (no residual add is followed by a norm): its norms only"
            else:
                reason = "a decoder layer of no known form (pre-norm, sandwich): its norms only, its residual adds stay adds"
            entries.append(Entry(where, label, form if fuse_residual and form in recognise.FUSED_FORMS else None, reason))
    return entries


def _check(entries, modules, gamma_offset, strict: bool):
    if gamma_offset is not None:
        gamma_offset = attrs.check({"gamma_offset": gamma_offset})["gamma_offset"]
    for entry in entries:
        module = modules[entry.name]
        spec = entry.patched_as
        if isinstance(spec, NormSpec):
            dtype = _weight_dtype(module)
            if dtype is not None and dtype not in SUPPORTED_DTYPES:
                raise InvalidInputError(f"{entry.name} has a {str(dtype)[6:]} weight: rmsnorm_backward's operators take "
                                        "float16, bfloat16 and float32 (cast the model, or leave it unpatched).")
            if gamma_offset is not None and float(gamma_offset) != spec.gamma_offset:
                raise InvalidInputError(f"{entry.name} is a {spec.source} norm, which scales by weight + "
                                        f"{spec.gamma_offset}: gamma_offset {gamma_offset!r} would train a different "
                                        "model.")
        elif strict and entry.patched_as is None and recognise.looks_like_rmsnorm(type(module)):
            raise InvalidInputError(f"{entry.name} is a {entry.cls}, {entry.reason}.")


def _verify(module, spec: NormSpec) -> None:
    """Once per class, where cheap (a plain CPU weight): the patched forward against the class's own on
    a random input; a class that computes otherwise is refused."""
    cls = _original(type(module))
    weight = getattr(module, "weight", None)
    if cls in recognise._verified or weight is None or type(weight.data) is not torch.Tensor or weight.device.type != "cpu":
        return
    shape = tuple(weight.shape)
    x = torch.randn((3, *shape), generator=torch.Generator().manual_seed(0)).to(weight.dtype)
    with torch.no_grad():
        expected = cls.forward(module, x)
        got = forwards.normalise(module, x, spec)
    tolerance = 1e-5 if weight.dtype == torch.float32 else 2e-2
    if got.shape != expected.shape or not torch.allclose(got.float(), expected.float(), rtol=tolerance, atol=tolerance):
        raise InvalidInputError(f"{cls.__module__}.{cls.__qualname__} does not compute what {spec.source}'s norm does "
                                "(its forward on a random input differs): it is left unpatched; register_norm "
                                "declares its gamma offset, eps and casting.")
    recognise._verified.add(cls)


def _report(model, entries, strict: bool) -> None:
    patched = Counter(e.cls.rsplit(".", 1)[-1] for e in entries if e.patched_as is not None)
    log.info("patch_model(%s): %s", type(model).__name__,
             ", ".join(f"{n} x{c}" for n, c in patched.items()) or "nothing patched")
    for entry in entries:
        if entry.patched_as is None and entry.reason.startswith("a post-norm"):
            log.info("%s (%s) is %s.", entry.name, entry.cls, entry.reason)
    left = {}
    for entry in entries:
        quiet = entry.reason.startswith(("fuse_residual", "a post-norm"))  # chosen, or nothing to fuse
        if entry.patched_as is None and not quiet:
            left.setdefault((entry.cls, entry.reason), []).append(entry.name)
    for (cls, reason), names in left.items():  # shown once per place by warnings' own filter
        warnings.warn(f"rmsnorm_backward left {names[0]}{f' and {len(names) - 1} more' if len(names) > 1 else ''} "
                      f"alone: {cls}, {reason}.", stacklevel=3)


def patch_model(model, *, gamma_offset=None, fuse_residual: bool = True, strict: bool = True):
    """Patches a built model in place and returns it: every RMSNorm whose computation is known
    (recognise.py) runs this package's operators, and (fuse_residual) every decoder layer of a known
    form routes its residual add into the next norm. Before changing anything it refuses an RMSNorm
    class it does not know (strict; strict=False warns and leaves it alone), a weight dtype the
    operators do not take and a `gamma_offset` that is not the norm's. Decoder layers of another form
    keep their adds, with a warning naming the class; plan(model) lists all of it."""
    entries = plan(model, fuse_residual=fuse_residual)
    modules = dict(model.named_modules())
    modules.setdefault(type(model).__name__, model)
    _check(entries, modules, gamma_offset, strict)
    todo = [(modules[e.name], e.patched_as) for e in entries if e.patched_as is not None]
    if not any(isinstance(p, NormSpec) for _m, p in todo):
        raise InvalidInputError(f"{type(model).__name__} has no RMSNorm rmsnorm_backward.integrations patches "
                                "(Llama's or Gemma's forms in transformers, torch.nn.RMSNorm, or a class given to "
                                "register_norm).")
    for module, spec in todo:
        if isinstance(spec, NormSpec):
            _verify(module, spec)
    for module, patched_as in todo:
        module.__class__ = _subclass(type(module), patched_as)
    _report(model, entries, strict)
    return model


def unpatch_model(model):
    """Undoes patch_model in place and returns the model."""
    for module in model.modules():
        module.__class__ = _original(type(module))
    return model
