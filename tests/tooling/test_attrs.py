# SPDX-License-Identifier: BSD-3-Clause
"""The operator's attributes have one home on the Python side: their defaults and rules come from
op_def through rmsnorm_backward.attrs, no Python signature writes a default of its own, and no other
module writes a rule of them."""
from __future__ import annotations

import ast
import inspect
import math

import pytest

from rmsnorm_backward import attrs, op_def, resources
from rmsnorm_backward.errors import InvalidInputError

PACKAGE = resources.package_dir()
OP = op_def.load()
NAMES = {a.name for a in OP.attrs}


def hand_written_defaults(path) -> list[str]:
    """Parameters named like an attribute whose default is a literal, and click options of an
    attribute (--gamma-offset) whose default= is a literal, in one Python file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [f"{getattr(node, 'name', 'lambda')}({a.arg}=...)" for a, d in pairs
                      if a.arg in NAMES and isinstance(d, ast.Constant) and d.value is not None]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and node.args[0].value in {"--" + n.replace("_", "-") for n in NAMES}):
            found += [f"option {node.args[0].value}" for k in node.keywords
                      if k.arg == "default" and isinstance(k.value, ast.Constant)]
    return found


def test_no_python_signature_writes_an_attributes_default():
    found = {str(p.relative_to(PACKAGE)): bad for p in sorted(PACKAGE.rglob("*.py"))
             if (bad := hand_written_defaults(p))}
    assert found == {}


@pytest.mark.parametrize("source", ["def f(x, gamma_offset=0.0): pass", "def f(*, gamma_offset: float = 1): pass",
                                    "g = lambda gamma_offset=0.0: 1",
                                    "@click.option('--gamma-offset', type=float, default=0.0)\ndef f(): pass"])
def test_the_scan_finds_a_hand_written_default(source, tmp_path):
    path = tmp_path / "a.py"
    path.write_text(source + "\n")
    assert hand_written_defaults(path)


def test_the_entry_points_take_op_defs_defaults():
    torch = pytest.importorskip("torch")
    from rmsnorm_backward.cli.golden import command
    from rmsnorm_backward.golden import golden
    from rmsnorm_backward.simulate import simulate
    from rmsnorm_backward.torch import RMSNorm, add_rms_norm, rms_norm

    for attr in OP.attrs:
        for function in (rms_norm, add_rms_norm, RMSNorm.__init__, simulate, golden):
            assert inspect.signature(function).parameters[attr.name].default == attr.default, function
        (option,) = [p for p in command.params if p.name == attr.name]
        assert option.default == attr.default
        for op in (torch.ops.rmsnorm_backward.rms_norm_backward, torch.ops.rmsnorm_backward.rms_norm):
            (arg,) = [a for a in op.default._schema.arguments if a.name == attr.name]
            assert arg.default_value == attr.default


def test_no_other_module_writes_an_attributes_rule():
    """attrs.py's sentences and its float32 bound appear in no other module of the package."""
    rules = ("finite in float32", "must be 0 without", "3.40282346")
    found = {str(p.relative_to(PACKAGE)): [r for r in rules if r in p.read_text()] for p in PACKAGE.rglob("*.py")
             if p.name != "attrs.py"}
    assert {p: r for p, r in found.items() if r} == {}
    text = (PACKAGE / "attrs.py").read_text()
    assert "finite in float32" in text and "FLOAT32_MAX = 3.40282346" in text and "without {attr.needs}" in text


def test_check_fills_defaults_and_returns_typed_values():
    assert attrs.check({}) == {a.name: a.default for a in OP.attrs}
    assert attrs.check({"gamma_offset": 1}) == {"gamma_offset": 1.0}
    assert type(attrs.check({"gamma_offset": 1})["gamma_offset"]) is float
    assert attrs.check({"gamma_offset": 0.0}, has_gamma=False) == {"gamma_offset": 0.0}


@pytest.mark.parametrize("values,has_gamma,why", [
    ({"gamma_offset": True}, True, "gamma_offset must be a real number (got True)."),
    ({"gamma_offset": "1"}, True, "gamma_offset must be a real number (got '1')."),
    ({"gamma_offset": math.nan}, True, "gamma_offset must be finite in float32 (got nan)."),
    ({"gamma_offset": 1e39}, True, "gamma_offset must be finite in float32 (got 1e+39)."),
    ({"gamma_offset": 0.5}, False, "gamma_offset must be 0 without gamma (got 0.5)."),
    ({"offset": 1.0}, True, "attributes must be among gamma_offset (got offset)."),
])
def test_check_refuses_in_one_sentence(values, has_gamma, why):
    with pytest.raises(InvalidInputError) as e:
        attrs.check(values, has_gamma=has_gamma)
    assert str(e.value) == why


def test_op_def_states_the_rules_it_is_read_for():
    (gamma_offset,) = OP.attrs
    assert gamma_offset.finite and gamma_offset.needs == "gamma" and OP.tensor("gamma").optional


def test_the_default_soc_is_op_defs_reference_and_the_tilings():
    from rmsnorm_backward import _tiling, host_tiling
    from rmsnorm_backward.simulate import simulate

    assert host_tiling.DEFAULT_SOC == OP.reference_soc == _tiling.REFERENCE_SOC
    assert inspect.signature(simulate).parameters["soc"].default == OP.reference_soc
