# SPDX-License-Identifier: BSD-3-Clause
"""Which norm and decoder-layer classes the integrations patch, decided by what their forward computes.

A norm class is known when
  - it was registered (register_norm: the user says how it computes),
  - it is torch.nn.RMSNorm or a subclass that keeps its forward (gamma_offset 0, eps None meaning
    torch.finfo(x.dtype).eps, all in fp32), or
  - its forward (and every method of its own that forward calls) is, statement for statement, the
    forward of a reference family's norm (families.py): Llama's or Gemma's. Comments, docstrings,
    annotations and names of the function differ freely; the arithmetic, the attribute holding eps and
    the casts do not.
A decoder layer class is known when its forward is a reference family's layer forward in the same
sense, its attention called with every argument of its own forward, passed on by name (in any order).
Anything else named like an RMSNorm, or marked by transformers' use_kernel_forward_from_hub("RMSNorm"),
is an RMSNorm this package does not know: callers refuse or warn about it, naming the class.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import textwrap
from dataclasses import dataclass

import torch

from .. import attrs
from ..errors import InvalidInputError
from ..torch.functional import CASTINGS
from .families import EQUIVALENT_NORMS, FAMILIES


@dataclass(frozen=True)
class NormSpec:
    """How a norm class computes: y = x * rstd * (weight + gamma_offset), eps read from `eps_attr`,
    rounded by `casting` (functional.CASTINGS); `source` names where the rule comes from."""
    gamma_offset: float
    eps_attr: str
    casting: str
    source: str


TORCH_RMSNORM = NormSpec(0.0, "eps", "fp32", "torch.nn.RMSNorm")
_REGISTERED: dict[type, NormSpec] = {}


def register_norm(cls: type, *, gamma_offset: float = attrs.GAMMA_OFFSET, eps_attr: str = "eps", casting: str = "fp32") -> NormSpec:
    """Declares how the norm class `cls` computes, so patch_model patches it (and its subclasses that
    keep its forward): y = x / sqrt(mean(x^2) + eps) * (weight + gamma_offset) over the weight's
    dims, eps the module's attribute `eps_attr`, y rounded by `casting`: "fp32" (all in fp32, rounded
    once: Gemma's, torch's) or "input" (the normalised x rounded to x's dtype before the weight:
    Llama's). A patched module's first forward is checked against the class's own once per class."""
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise InvalidInputError(f"register_norm takes a torch.nn.Module subclass (got {cls!r}).")
    if casting not in CASTINGS:
        raise InvalidInputError(f"casting must be one of {', '.join(CASTINGS)} (got {casting!r}).")
    if not isinstance(eps_attr, str) or not eps_attr.isidentifier():
        raise InvalidInputError(f"eps_attr must be the name of the module's eps attribute (got {eps_attr!r}).")
    gamma_offset = attrs.check({"gamma_offset": gamma_offset})["gamma_offset"]
    spec = NormSpec(gamma_offset, eps_attr, casting, f"registered {cls.__qualname__}")
    _REGISTERED[cls] = spec
    _verified.discard(cls)
    return spec


def unregister_norm(cls: type) -> None:
    """Forgets a register_norm (patch_model then treats the class as before it)."""
    _REGISTERED.pop(cls, None)
    _verified.discard(cls)


def _canonical(fn) -> ast.FunctionDef | None:
    """fn's definition without what does not compute: decorators, annotations, docstring, name."""
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    return _stripped(node) if isinstance(node, ast.FunctionDef) else None


def _stripped(node: ast.FunctionDef) -> ast.FunctionDef:
    node.decorator_list, node.returns, node.name = [], None, "f"
    args = node.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if a is not None:
            a.annotation = None
    if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
        node.body = node.body[1:]
    return node


def _self_calls(node: ast.FunctionDef) -> list[str]:
    return sorted({n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"})


def _norm_print(forward: ast.FunctionDef | None, method) -> str | None:
    """The forward and every method of the class it calls on self (method(name): its definition,
    None when the class has no such function), as canonical source."""
    if forward is None:
        return None
    parts = [ast.dump(forward)]
    for name in _self_calls(forward):
        called = method(name)
        if called is not False:
            parts.append(f"{name}:{ast.dump(called) if called is not None else '?'}")
    return "|".join(parts)


@functools.lru_cache(maxsize=None)
def norm_fingerprint(cls: type) -> str | None:
    """The forward and every method of the class it calls on self, as canonical source."""
    def method(name):
        fn = getattr(cls, name, None)
        return _canonical(fn) if inspect.isfunction(fn) else False

    return _norm_print(_canonical(cls.forward), method)


def _layer_print(node: ast.FunctionDef | None) -> str | None:
    """The layer's forward with its signature dropped; a call passing on every argument of the forward
    by name (hidden_states aside), **kwargs included, becomes one marker, whatever their order."""
    if node is None:
        return None
    a = node.args
    names = {p.arg for p in (*a.args, *a.kwonlyargs)} - {"self", "hidden_states"}
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        named = {k.arg for k in call.keywords if k.arg is not None and k.arg != "hidden_states"
                 and isinstance(k.value, ast.Name) and k.value.id == k.arg}
        starred = [k for k in call.keywords if k.arg is None]
        if names and named == names and len(starred) == (a.kwarg is not None) and all(
                isinstance(k.value, ast.Name) and k.value.id == a.kwarg.arg for k in starred):
            rest = [k for k in call.keywords if k.arg == "hidden_states" or (k.arg not in names and k.arg is not None)]
            call.keywords = rest + [ast.keyword(arg="FORWARDED", value=ast.Constant(True))]
        call.keywords.sort(key=lambda k: k.arg or "")
    node.args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                              defaults=[])
    return ast.dump(node)


@functools.lru_cache(maxsize=None)
def layer_fingerprint(cls: type) -> str | None:
    return _layer_print(_canonical(cls.forward))


def _reference_methods(module: str, names: tuple[str, ...]) -> dict[str, dict[str, ast.FunctionDef]]:
    """The methods of classes `names` in transformers.models.<module>.modeling_<module>, read from its
    source file without importing it (importing a dozen modeling modules costs seconds)."""
    try:
        spec = importlib.util.find_spec(f"transformers.models.{module}.modeling_{module}")
    except ImportError:
        return {}
    if spec is None or not spec.origin:
        return {}
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {c.name: {m.name: m for m in c.body if isinstance(m, ast.FunctionDef)}
            for c in tree.body if isinstance(c, ast.ClassDef) and c.name in names}


@functools.cache
def _references() -> tuple[dict[str, NormSpec], dict[str, str]]:
    """Fingerprint -> how it computes, from the reference families the installed transformers has."""
    norms, layers = {}, {}
    rows = [(f.module, f.norm, f.layer, NormSpec(f.gamma_offset, f.eps, f.casting, f.module), f.form)
            for f in FAMILIES.values()]
    rows += [(m, norm, "", NormSpec(offset, eps, casting, m), "") for m, norm, offset, eps, casting in EQUIVALENT_NORMS]
    for module, norm, layer, spec, form in rows:
        classes = _reference_methods(module, (norm, layer))
        if norm in classes and "forward" in classes[norm]:
            methods = classes[norm]
            fp = _norm_print(_stripped(methods["forward"]),
                             lambda name, methods=methods: _stripped(methods[name]) if name in methods else False)
            norms.setdefault(fp, spec)
        if layer in classes and "forward" in classes[layer]:
            layers.setdefault(_layer_print(_stripped(classes[layer]["forward"])), form)
    return norms, layers


def _is_ours(cls: type) -> bool:
    return cls.__module__.startswith("rmsnorm_backward.")


def norm_spec(cls: type) -> NormSpec | None:
    """How instances of the norm class `cls` compute, or None when it is not a norm this package knows."""
    for base in cls.__mro__:
        if base in _REGISTERED and cls.forward is base.forward:
            return _REGISTERED[base]
    if issubclass(cls, torch.nn.RMSNorm) and cls.forward is torch.nn.RMSNorm.forward:
        return TORCH_RMSNORM
    if "transformers" not in cls.forward.__module__:
        return None  # the reference forms are transformers' own; a look-alike elsewhere is registered
    return _references()[0].get(norm_fingerprint(cls)) if looks_like_rmsnorm(cls) else None


def layer_form(cls: type) -> str | None:
    """The decoder layer form (families.py) of a layer class, or None."""
    if not cls.__name__.endswith("DecoderLayer") or "transformers" not in cls.forward.__module__:
        return None
    return _references()[1].get(layer_fingerprint(cls))


FUSED_FORMS = ("pre", "sandwich")  # the layer forms whose residual add is followed by a norm


def looks_like_rmsnorm(cls: type) -> bool:
    """Named like an RMSNorm, marked as one for transformers' kernel hub, a torch.nn.RMSNorm or registered."""
    return ("rmsnorm" in cls.__name__.lower() or getattr(cls, "kernel_layer_name", None) == "RMSNorm"
            or issubclass(cls, torch.nn.RMSNorm) or any(base in _REGISTERED for base in cls.__mro__))


def needs_patch(cls: type) -> bool:
    """An RMSNorm-like class whose forward is not already this package's."""
    return looks_like_rmsnorm(cls) and not _is_ours(cls) and not _is_ours_forward(cls)


def _is_ours_forward(cls: type) -> bool:
    return getattr(cls.forward, "__module__", "").startswith("rmsnorm_backward.")


_verified: set[type] = set()  # norm classes whose patched forward was checked against their own
