# SPDX-License-Identifier: BSD-3-Clause
"""The ATB operation's plain rules (framework/atb_plugin/operation_rules.*) compiled with g++ alone, no
ACL or ATB header: the outputs InferShape gives for ATB's example shapes, both rstd forms, k = 1..3 and
every dtype; every tensor row of the bad-input table (tests/hardening/test_bad_inputs.py) with the
tiling's own sentence and its ATB status class; and what only ATB asks (tensor counts, formats, the
outputs a caller passes, the reserved parameter bytes)."""
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import resources

ROOT = resources.checkout()
HERE = Path(__file__).resolve().parent
PLUGIN = ROOT / "framework" / "atb_plugin"
DTYPES = ("float16", "float32", "bfloat16")


def _bad_input_rows():
    """The tensor rows of the bad-input table that carry nothing but the four tensors the ATB operation
    takes (no SoC, block_dim or attribute; gamma given, no dres: its seed parameters have the plain
    form only)."""
    path = ROOT / "tests" / "hardening" / "test_bad_inputs.py"
    spec = importlib.util.spec_from_file_location("bad_input_table", path)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return [r for r in table.ROWS if r.surface in ("api", "tiling", "torch") and not r.options
            and r.spec.gamma is not None and r.spec.dres is None]


BAD_ROWS = _bad_input_rows()


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """rules(*lines) -> one answer per line from tests/atb_plugin/rules_driver.cpp."""
    exe = tmp_path_factory.mktemp("atb_rules") / "rules_driver"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(PLUGIN), "-I", str(HERE),
                    str(PLUGIN / "operation_rules.cpp"), *map(str, sorted((ROOT / "op_host" / "tiling").glob("*.cpp"))),
                    str(HERE / "rules_driver.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)

    def ask(*lines):
        proc = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=60, check=True)
        answers = proc.stdout.splitlines()
        assert len(answers) == len(lines), proc.stdout
        return answers

    return ask


def tensor(name, dtype, shape, fmt=None):
    return f"{name}={dtype}:{','.join(str(d) for d in shape)}" + (f"/{fmt}" if fmt else "")


def described(dtype, shape, fmt="ND"):
    return f"{dtype}[{','.join(str(d) for d in shape)}]/{fmt}"


def inputs(x, gamma, rstd, dtype, dy=None, dy_dtype=None, gamma_dtype=None, rstd_dtype="float32"):
    return " ".join((tensor("dy", dy_dtype or dtype, x if dy is None else dy), tensor("x", dtype, x),
                     tensor("rstd", rstd_dtype, rstd), tensor("gamma", gamma_dtype or dtype, gamma)))


def outputs(x, gamma, dtype, dgamma_dtype="float32"):
    return f"{tensor('dx', dtype, x)} {tensor('dgamma', dgamma_dtype, gamma)}"


@pytest.mark.parametrize("rstd", [(32, 64, 1), (32, 64)], ids=["rstd keepdims", "rstd flat"])
def test_seed_shapes_infer_dx_like_x_and_dgamma_fp32_like_gamma(rules, rstd):
    x, gamma = (32, 64, 128), (128,)
    assert rules(f"infer {inputs(x, gamma, rstd, 'float32')}") == [
        f"ok {described('float32', x)} {described('float32', gamma)}"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("flat_rstd", [False, True], ids=["rstd keepdims", "rstd flat"])
def test_infer_shape_over_k_trailing_dims_and_both_rstd_forms(rules, rng, dtype, k, flat_rstd):
    lead = tuple(int(d) for d in rng.integers(1, 9, size=int(rng.integers(1, 4))))
    gamma = tuple(int(d) for d in rng.integers(1, 33, size=k))
    x = lead + gamma
    rstd = lead if flat_rstd else lead + (1,) * k
    given = inputs(x, gamma, rstd, dtype)
    wrong_dgamma = "float16" if dtype != "float16" else "bfloat16"
    assert rules(f"infer {given}", f"check {given} {outputs(x, gamma, dtype)}",
                 f"check {given} {outputs(x, gamma, dtype, dgamma_dtype=wrong_dgamma)}") == [
        f"ok {described(dtype, x)} {described('float32', gamma)}",
        "ok",
        f"dtype dgamma must be float32 (got {wrong_dgamma}).",
    ]


def test_rows_zero_infers_an_empty_dx(rules):
    assert rules(f"infer {inputs((0, 8), (8,), (0, 1), 'bfloat16')}") == [
        f"ok {described('bfloat16', (0, 8))} {described('float32', (8,))}"]


def _status_class(message_pattern: str) -> str:
    """The ATB class a sentence of the table belongs to, read off its wording: dtype rules say
    "must be <dtype>" or name the dtype; every other rule is about shapes."""
    return "dtype" if re.search(r"must be |dtype", message_pattern) else "shape"


@pytest.mark.parametrize("row", BAD_ROWS, ids=[f"{r.surface}: {r.case}" for r in BAD_ROWS])
def test_bad_input_table_row_gets_the_tilings_sentence_and_its_class(rules, row):
    t = row.spec
    shapes, dtypes = t.shapes(), t.dtypes()
    line = " ".join(tensor(n, dtypes[n], shapes[n]) for n in ("dy", "x", "rstd", "gamma"))
    (answer,) = rules(f"infer {line}")
    fault, _, message = answer.partition(" ")
    assert fault == _status_class(row.message), answer
    assert re.fullmatch(row.message, message), answer


GOOD = inputs((4, 8), (8,), (4, 1), "float16")


@pytest.mark.parametrize("line, answer", [
    (f"infer {tensor('dy', 'float16', (4, 8))} {tensor('x', 'float16', (4, 8))} {tensor('rstd', 'float32', (4, 1))}",
     "input_count RmsNormBackwardOperation takes 4 (dy, x, rstd, gamma) input tensors (got 3)."),
    (f"infer {GOOD} {tensor('extra', 'float16', (8,))}",
     "input_count RmsNormBackwardOperation takes 4 (dy, x, rstd, gamma) input tensors (got 5)."),
    (f"check {GOOD} {tensor('dx', 'float16', (4, 8))}",
     "output_count RmsNormBackwardOperation takes 2 (dx, dgamma) output tensors (got 1)."),
    (f"check {GOOD} {outputs((8, 4), (8,), 'float16')}", "shape dx must have the shape of x [4, 8] (got [8, 4])."),
    (f"check {GOOD} {outputs((4, 8), (4,), 'float16')}", "shape dgamma must have the shape of gamma [8] (got [4])."),
    (f"check {GOOD} {outputs((4, 8), (8,), 'float32')}", "dtype dx must be the dtype of x, float16 (got float32)."),
    (f"check {GOOD} {tensor('dx', 'float16', (4, 8), 'NCHW')} {tensor('dgamma', 'float32', (8,))}",
     "format dx must have format ND (got NCHW)."),
    # An input's rule comes first, whatever the outputs are.
    (f"check {inputs((4, 8), (8,), (4, 1), 'float16', gamma_dtype='bfloat16')} {outputs((1,), (1,), 'int8')}",
     "dtype gamma must have the dtype of x, or be float32 (gamma bfloat16, x float16)."),
], ids=["3 inputs", "5 inputs", "1 output", "dx shape", "dgamma shape", "dx dtype", "dx format", "input first"])
def test_what_only_atb_asks(rules, line, answer):
    assert rules(line) == [answer]


@pytest.mark.parametrize("name", ["dy", "x", "rstd", "gamma"])
@pytest.mark.parametrize("fmt", ["NCHW", "FRACTAL_NZ"])
def test_every_input_must_have_format_nd(rules, name, fmt):
    given = {"dy": ("float16", (4, 8)), "x": ("float16", (4, 8)), "rstd": ("float32", (4,)), "gamma": ("float16", (8,))}
    line = " ".join(tensor(n, d, s, fmt if n == name else None) for n, (d, s) in given.items())
    assert rules(f"infer {line}") == [f"format {name} must have format ND (got {fmt})."]


@pytest.mark.parametrize("byte", range(8))
def test_reserved_bytes_must_be_zero(rules, rng, byte):
    value = int(rng.integers(1, 256))
    rsv = [0] * 8
    rsv[byte] = value
    assert rules("rsv 0 0 0 0 0 0 0 0", "rsv " + " ".join(map(str, rsv))) == [
        "ok", f"param param.rsv must be all zero, its bytes are reserved (byte {byte} is {value})."]
