# SPDX-License-Identifier: BSD-3-Clause
"""The operator's attributes in Python: their defaults and rules, read from op_def, checked here only.

    GAMMA_OFFSET                   gamma_offset's default: the default of every Python signature
                                   taking the attribute (never a literal of its own)
    check(values, has_gamma=...)   the attributes as op_def types them, or InvalidInputError naming the
                                   attribute and the rule it breaks

op_def's [[attrs]] gives each attribute its type, default and rules (finite: a finite float32;
needs: keeps its default without that optional input). The C++ tiling's input rules hold the same
rules for the NPU; in Python every entry point (the torch front end, simulate, golden, the CLI)
calls check() once, and what it calls afterwards takes the values as checked.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from . import op_def
from .errors import InvalidInputError

ATTRS = {a.name: a for a in op_def.load().attrs}
DEFAULTS = {name: a.default for name, a in ATTRS.items()}
GAMMA_OFFSET: float = DEFAULTS["gamma_offset"]

FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32: the operator holds a float attribute as one

_KINDS = {"float": ("a real number", numbers.Real, float), "int": ("an integer", numbers.Integral, int),
          "bool": ("True or False", bool, bool)}


def _typed(attr: op_def.Attr, value):
    what, kind, convert = _KINDS[attr.type]
    if (isinstance(value, bool) and attr.type != "bool") or not isinstance(value, kind):
        raise InvalidInputError(f"{attr.name} must be {what} (got {value!r}).")
    return convert(value)


def check(values: Mapping[str, object], *, has_gamma: bool = True) -> dict:
    """Every attribute of op_def, from `values` or its default, as a Python value of its type:
    InvalidInputError (one sentence naming the attribute and the rule) when one breaks a rule.
    has_gamma: whether the call has gamma (an attribute that needs it keeps its default without)."""
    unknown = sorted(set(values) - set(ATTRS))
    if unknown:
        raise InvalidInputError(f"attributes must be among {', '.join(ATTRS)} (got {', '.join(unknown)}).")
    present = {"gamma": has_gamma}
    out = {}
    for name, attr in ATTRS.items():
        value = _typed(attr, values.get(name, attr.default))
        if attr.finite and not (math.isfinite(value) and abs(value) <= FLOAT32_MAX):
            raise InvalidInputError(f"{name} must be finite in float32 (got {value:g}).")
        if attr.needs is not None and not present.get(attr.needs, True) and value != attr.default:
            raise InvalidInputError(f"{name} must be {attr.default:g} without {attr.needs} (got {value:g}).")
        out[name] = value
    return out
