# SPDX-License-Identifier: BSD-3-Clause
"""The bad-input table: one row per case, over the four ways in (the Python API `simulate`, the C++
tiling `compute_tiling`, the torch operator and the `rmsnorm-backward golden` CLI), each with the
sentence the user must get: it names the tensor or option and the rule. The CLI must also exit 2
with that sentence as click's one `Error:` line on stderr (after click's usage hint for a bad
option), no traceback, nothing on stdout and no file in --save-dir. The operator's forms are here too:
without gamma, with dres (the fused residual gradient), with gamma_offset, a gamma dtype beside x's.
Cases the kernel's own table (tests/kernel/test_invalid_inputs.py) covers for simulate and the tiling
appear here for the torch operator and the CLI instead."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest

from rmsnorm_backward import _tiling
from rmsnorm_backward.cli.sample_dir import sample_files
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.simulate import simulate

DTYPES = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64,
          "int8": np.int8, "int32": np.int32, "bool": np.bool_, "object": np.object_}


class Tensors(NamedTuple):
    """Shapes and dtypes of dy, x, rstd, gamma, dres (dy defaults to x's shape, dy, gamma and dres to
    x's dtype). gamma=None: no gamma; dres=None (the default): no dres. An absent tensor's shape is
    None and its dtype name "" (as the tiling takes them), its array None."""
    x: tuple = (4, 8)
    gamma: tuple | None = (8,)
    rstd: tuple = (4, 1)
    dy: tuple | None = None
    dtype: str = "float16"
    dy_dtype: str | None = None
    gamma_dtype: str | None = None
    rstd_dtype: str = "float32"
    dres: tuple | None = None
    dres_dtype: str | None = None

    def shapes(self):
        return {"dy": self.dy or self.x, "x": self.x, "rstd": self.rstd, "gamma": self.gamma, "dres": self.dres}

    def dtypes(self):
        dtypes = {"dy": self.dy_dtype or self.dtype, "x": self.dtype, "rstd": self.rstd_dtype,
                  "gamma": self.gamma_dtype or self.dtype, "dres": self.dres_dtype or self.dtype}
        return {n: "" if self.shapes()[n] is None else d for n, d in dtypes.items()}

    def arrays(self, rng):
        """dy, x, rstd, gamma, dres as NumPy arrays (None where absent)."""
        dtypes = self.dtypes()
        return tuple(None if shape is None else np.asarray(4 * rng.standard_normal(shape)).astype(DTYPES[dtypes[n]])
                     for n, shape in self.shapes().items())


class Row(NamedTuple):
    surface: str   # api | tiling | torch | cli
    case: str
    spec: object   # Tensors (+ options) for api/tiling/torch; argv (+ a sample dir and its change) for cli
    message: str   # regex the one sentence must match
    options: dict = {}


# The valid sample directories a cli row's change starts from (x [4, 8] fp32), by name.
SAMPLES = {"plain": ("--shape", "4,8"), "residual": ("--shape", "4,8", "--residual"),
           "no_gamma": ("--shape", "4,8", "--no-gamma")}


def cli(*argv, change=None, sample="plain"):
    """CLI arguments; `change(dir)` edits a copy of the valid sample directory SAMPLES[sample],
    passed as --from-dir."""
    return (list(argv), change, sample)


def _unchanged(d: Path):
    """A change that leaves the sample directory valid (for options refused with --from-dir)."""


def _edit_case(**updates):
    def change(d: Path):
        case = json.loads((d / "case.json").read_text())
        for key, value in updates.items():
            group, name = key.split("__")
            case[group][name] = value
        case["files"] = sample_files(case)  # the files table follows, so the edit itself is what is judged
        (d / "case.json").write_text(json.dumps(case))
    return change


def _drop(group, name):
    """Removes case.json's entry for `name` in `group` (shapes or dtypes); the files table stays, as
    the rule judged comes before it."""
    def change(d: Path):
        case = json.loads((d / "case.json").read_text())
        del case[group][name]
        (d / "case.json").write_text(json.dumps(case))
    return change


def _truncate(name, keep):
    def change(d: Path):
        path = d / "input" / f"{name}.bin"
        path.write_bytes(path.read_bytes()[:keep])
    return change


def _write_ones(name, count, dtype):
    def change(d: Path):
        np.ones(count, dtype).tofile(d / "input" / f"{name}.bin")
    return change


ROWS = [
    # The Python API: the tiling's sentences reach simulate's caller, plus simulate's own checks.
    Row("api", "dy rank differs from x", Tensors(dy=(4, 8, 1)), r"dy must have the shape of x \(dy \[4, 8, 1\], x \[4, 8\]\)\."),
    Row("api", "dy float32, x bfloat16", Tensors(dtype="bfloat16", dy_dtype="float32"),
        r"dy must have the dtype of x \(dy float32, x bfloat16\)\."),
    Row("api", "2-D gamma leading, not trailing", Tensors(x=(2, 3, 4), gamma=(2, 3), rstd=(2, 1, 1)),
        r"gamma must equal the trailing 2 dims of x \(gamma \[2, 3\], x \[2, 3, 4\]\)\."),
    Row("api", "gamma rank 3 = x rank 3", Tensors(x=(2, 3, 4), gamma=(2, 3, 4), rstd=(1,)),
        r"gamma must have fewer dims than x, being its trailing dims \(gamma \[2, 3, 4\], x \[2, 3, 4\]\)\."),
    Row("api", "x rank 9 with 2-D gamma", Tensors(x=(1,) * 7 + (2, 4), gamma=(2, 4), rstd=(1,) * 7),
        r"x must have rank 1 to 8 \(got rank 9\)\."),
    Row("api", "rstd flat of the wrong size", Tensors(rstd=(5,)), r"rstd must hold one value per row of x, shaped \[4, 1\] or \[4\] \(got \[5\]\)\."),
    Row("api", "rstd float64", Tensors(rstd_dtype="float64"), r"rstd must be float32 \(got float64\)\."),
    Row("api", "int8 inputs", Tensors(dtype="int8"), r"x must be float16, float32 or bfloat16 \(got int8\)\."),
    Row("api", "float64 inputs", Tensors(dtype="float64"), r"x must be float16, float32 or bfloat16 \(got float64\)\."),
    Row("api", "bool inputs", Tensors(dtype="bool"), r"x must be float16, float32 or bfloat16 \(got bool\)\."),
    Row("api", "unsupported SoC", Tensors(), r"soc must be one of Ascend910B2, Ascend910B3, Ascend910_93 \(got Ascend910A\)\.",
        {"soc": "Ascend910A"}),
    Row("api", "block_dim a bool", Tensors(), r"block_dim must be a positive integer or None \(got True\)\.", {"block_dim": True}),
    # ... and the forms: dres, no gamma, gamma_offset, a gamma dtype beside x's.
    Row("api", "dres rank differs from x", Tensors(dres=(4, 8, 1)), r"dres must have the shape of x \(dres \[4, 8, 1\], x \[4, 8\]\)\."),
    Row("api", "dres float16 beside bfloat16 x", Tensors(dtype="bfloat16", dres=(4, 8), dres_dtype="float16"),
        r"dres must have the dtype of x \(dres float16, x bfloat16\)\."),
    Row("api", "dres an object array", Tensors(dres=(4, 8), dres_dtype="object"), r"dres must be a numeric NumPy array \(got dtype object\)\."),
    Row("api", "no gamma, x rank 1", Tensors(x=(8,), gamma=None, rstd=(1,)), r"x must have rank 2 to 8 without gamma \(got rank 1\)\."),
    Row("api", "gamma float16 beside bfloat16 x", Tensors(dtype="bfloat16", gamma_dtype="float16"),
        r"gamma must have the dtype of x, or be float32 \(gamma float16, x bfloat16\)\."),
    Row("api", "gamma_offset None", Tensors(), r"gamma_offset must be a real number \(got None\)\.", {"gamma_offset": None}),
    # The C++ tiling, with what NumPy arrays cannot carry (negative dims, unknown dtype names).
    Row("tiling", "negative dim in x", Tensors(x=(-1, 8), dy=(-1, 8), rstd=(-1, 1)), r"x must have no negative dims \(got \[-1, 8\]\)\."),
    Row("tiling", "gamma rank 9", Tensors(x=(2, 4, 8), gamma=(1,) * 8 + (8,), rstd=(2, 4, 1)),
        r"gamma must have rank 1 to 8 \(got rank 9\)\."),
    Row("tiling", "unknown dtype name", Tensors(dtype="float8_e4m3"), r"x must be float16, float32 or bfloat16 \(got float8_e4m3\)\."),
    Row("tiling", "rstd bfloat16", Tensors(rstd_dtype="bfloat16"), r"rstd must be float32 \(got bfloat16\)\."),
    Row("tiling", "gamma without elements", Tensors(x=(4, 0), gamma=(0,)), r"gamma must have 1 to 2\^30 elements \(got 0\)\."),
    Row("tiling", "more than 2^40 rows", Tensors(x=(1 << 21, 1 << 21, 8), rstd=(1 << 21, 1 << 21, 1)),
        r"x must have at most 2\^40 rows \(got shape \[2097152, 2097152, 8\]\)\."),
    Row("tiling", "empty SoC name", Tensors(), r"soc must be one of Ascend910B2, Ascend910B3, Ascend910_93 \(got \)\.", {"soc": ""}),
    Row("tiling", "dres transposed", Tensors(dres=(8, 4)), r"dres must have the shape of x \(dres \[8, 4\], x \[4, 8\]\)\."),
    Row("tiling", "dres bfloat16 beside float16 x", Tensors(dres=(4, 8), dres_dtype="bfloat16"),
        r"dres must have the dtype of x \(dres bfloat16, x float16\)\."),
    Row("tiling", "no gamma, rstd giving no row", Tensors(gamma=None, rstd=(8,)),
        r"rstd must hold one value per row of x, shaped x\.shape\[:-k\] \+ \(1,\)\*k or x\.shape\[:-k\] for the k normalised "
        r"dims \(1 <= k < x\.ndim\), which give the row when there is no gamma \(rstd \[8\], x \[4, 8\]\)\."),
    Row("tiling", "no gamma, rows without elements", Tensors(x=(4, 0), gamma=None, rstd=(4, 1)),
        r"a row of x \(without gamma: its trailing dims that rstd lacks\) must have 1 to 2\^30 elements \(got 0\)\."),
    Row("tiling", "no gamma, x rank 9", Tensors(x=(1,) * 9, gamma=None, rstd=(1,) * 8), r"x must have rank 2 to 8 without gamma \(got rank 9\)\."),
    Row("tiling", "no gamma, gamma_offset -1", Tensors(gamma=None), r"gamma_offset must be 0 without gamma \(got -1\)\.",
        {"gamma_offset": -1.0}),
    Row("tiling", "gamma_offset NaN", Tensors(), r"gamma_offset must be finite in float32 \(got nan\)\.", {"gamma_offset": math.nan}),
    # The torch operator.
    Row("torch", "dy shape differs from x", Tensors(dy=(4, 9)), r"dy must have the shape of x \(dy \[4, 9\], x \[4, 8\]\)\."),
    Row("torch", "gamma dtype differs from x", Tensors(dtype="float32", gamma_dtype="float16"),
        r"gamma must have the dtype of x, or be float32 \(gamma float16, x float32\)\."),
    Row("torch", "gamma not the trailing dims", Tensors(x=(4, 8, 6), rstd=(4, 8, 1)),
        r"gamma must equal the trailing 1 dims of x \(gamma \[8\], x \[4, 8, 6\]\)\."),
    Row("torch", "rstd of the wrong size", Tensors(rstd=(3, 1)), r"rstd must hold one value per row of x, shaped \[4, 1\] or \[4\] \(got \[3, 1\]\)\."),
    Row("torch", "rstd float16", Tensors(rstd_dtype="float16"), r"rstd must be float32 \(got float16\)\."),
    Row("torch", "int32 inputs", Tensors(dtype="int32"), r"x must be float16, float32 or bfloat16 \(got int32\)\."),
    Row("torch", "float64 inputs", Tensors(dtype="float64"), r"x must be float16, float32 or bfloat16 \(got float64\)\."),
    Row("torch", "rank 0", Tensors(x=(), gamma=(1,), rstd=()), r"x must have rank 1 to 8 \(got rank 0\)\."),
    Row("torch", "rank 9", Tensors(x=(1,) * 8 + (8,), rstd=(1,) * 9), r"x must have rank 1 to 8 \(got rank 9\)\."),
    Row("torch", "dres shape differs from x", Tensors(dres=(4, 9)), r"dres must have the shape of x \(dres \[4, 9\], x \[4, 8\]\)\."),
    Row("torch", "dres float64 beside float32 x", Tensors(dtype="float32", dres=(4, 8), dres_dtype="float64"),
        r"dres must have the dtype of x \(dres float64, x float32\)\."),
    Row("torch", "dres float32 beside float32 gamma, bfloat16 x", Tensors(dtype="bfloat16", gamma_dtype="float32", dres=(4, 8),
                                                                  dres_dtype="float32"),
        r"dres must have the dtype of x \(dres float32, x bfloat16\)\."),  # mixed precision: dres follows x, not gamma
    Row("torch", "gamma float16 beside bfloat16 x", Tensors(dtype="bfloat16", gamma_dtype="float16"),
        r"gamma must have the dtype of x, or be float32 \(gamma float16, x bfloat16\)\."),
    Row("torch", "no gamma, x rank 1", Tensors(x=(8,), gamma=None, rstd=(1,)), r"x must have rank 2 to 8 without gamma \(got rank 1\)\."),
    Row("torch", "no gamma, gamma_offset 1", Tensors(gamma=None), r"gamma_offset must be 0 without gamma \(got 1\)\.",
        {"gamma_offset": 1.0}),
    Row("torch", "gamma_offset 1e39", Tensors(), r"gamma_offset must be finite in float32 \(got inf\)\.", {"gamma_offset": 1e39}),  # the tiling's rule, on the float32 it holds
    # The CLI.
    Row("cli", "--shape not integers", cli("--shape", "3,x"), r"'--shape': must be non-negative integers separated by commas.*\(got '3,x'\)"),
    Row("cli", "--shape empty", cli("--shape", ""), r"'--shape': must be non-negative integers separated by commas.*\(got ''\)"),
    Row("cli", "--shape negative", cli("--shape", "4,-8"), r"'--shape': must be non-negative integers.*\(got '4,-8'\)"),
    Row("cli", "--shape rank 10", cli("--shape", "1,1,1,1,1,1,1,1,1,8"), r"x must have rank 1 to 8 \(got rank 10\)\."),
    Row("cli", "--gamma-dims = rank", cli("--shape", "4,8", "--gamma-dims", "2"), r"'--gamma-dims': must be from 1 to 1 for a 2-D --shape \(got 2\)"),
    Row("cli", "--dtype float64", cli("--dtype", "fp64"), r"'--dtype': 'fp64' is not one of 'fp16', 'fp32', 'bf16'\."),
    Row("cli", "--shape 1,2^31 (more gamma than the tiling takes)", cli("--shape", "1,2147483648"),
        r"gamma must have 1 to 2\^30 elements \(got 2147483648\)\."),
    Row("cli", "--shape 100000,100000 (more than the host memory)", cli("--shape", "100000,100000"),
        r"golden on x \[100000, 100000\] float32 needs about [0-9.]+ GiB of host memory, more than the [0-9.]+ GiB"),
    Row("cli", "--soc unsupported", cli("--soc", "Ascend310P3"), r"'--soc': soc must be one of the supported SoCs \(Ascend910B2, Ascend910B3, Ascend910_93\), got 'Ascend310P3'"),
    Row("cli", "--seed negative", cli("--seed", "-1"), r"'--seed': -1 is not in the range x>=0\."),
    Row("cli", "--from-dir missing", cli("--from-dir", "{tmp}/nowhere"), r"'--from-dir': Directory '\S+/nowhere' does not exist\."),
    Row("cli", "missing x.bin", cli(change=lambda d: (d / "input" / "x.bin").unlink()), r"\S+/input/x\.bin is missing \(listed in \S+/case\.json\)"),
    Row("cli", "short dy.bin", cli(change=_truncate("dy", 10)), r"\S+/input/dy\.bin has 10 bytes; shape \[4, 8\] of float32 needs 128"),
    Row("cli", "case.json: dy shape differs from x",
        cli(change=lambda d: (_edit_case(shapes__dy=[4, 9])(d), _write_ones("dy", 36, np.float32)(d))),
        r"dy must have the shape of x \(dy \[4, 9\], x \[4, 8\]\)\."),
    Row("cli", "case.json: float64 tensors", cli(change=_edit_case(dtypes__x="float64", dtypes__dy="float64")),
        r"case\.json is not a valid case description \(dtypes must be among float16, float32, bfloat16\)"),
    Row("cli", "case.json not JSON", cli(change=lambda d: (d / "case.json").write_text("{nope")),
        r"case\.json is not a valid case description"),
    # ... and the forms' options (--residual, --no-gamma, --gamma-offset, --gamma-dtype) and sample directories.
    Row("cli", "--no-gamma --shape 4,0", cli("--no-gamma", "--shape", "4,0"),
        r"a row of x \(without gamma: its trailing dims that rstd lacks\) must have 1 to 2\^30 elements \(got 0\)\."),
    Row("cli", "--no-gamma with --gamma-dtype", cli("--no-gamma", "--gamma-dtype", "fp32"), r"--gamma-dtype needs a gamma: drop it or --no-gamma"),
    Row("cli", "--residual --no-gamma with --gamma-offset", cli("--residual", "--no-gamma", "--gamma-offset", "1"),
        r"gamma_offset must be 0 without gamma \(got 1\); drop it or --no-gamma"),
    Row("cli", "--gamma-offset 1e39", cli("--gamma-offset", "1e39"), r"'--gamma-offset': gamma_offset must be finite in float32 \(got 1e\+39\)\."),
    Row("cli", "--gamma-dtype fp16 beside --dtype bf16", cli("--dtype", "bf16", "--gamma-dtype", "fp16"),
        r"gamma must have the dtype of x, or be float32 \(gamma float16, x bfloat16\)\."),
    Row("cli", "--from-dir with the forms' options", cli("--gamma-dtype", "fp32", "--gamma-offset", "0", "--no-gamma", "--residual",
                                                          change=_unchanged),
        r"--from-dir takes the case from its case\.json: drop --gamma-dtype, --gamma-offset, --no-gamma, --residual"),
    Row("cli", "missing dres.bin", cli(change=lambda d: (d / "input" / "dres.bin").unlink(), sample="residual"),
        r"\S+/input/dres\.bin is missing \(listed in \S+/case\.json\)"),
    Row("cli", "short dres.bin", cli(change=_truncate("dres", 10), sample="residual"),
        r"\S+/input/dres\.bin has 10 bytes; shape \[4, 8\] of float32 needs 128"),
    Row("cli", "case.json: dres float16 beside float32 x", cli(change=_edit_case(dtypes__dres="float16"), sample="residual"),
        r"dres must have the dtype of x \(dres float16, x float32\)\."),
    Row("cli", "case.json: dres shape differs from x", cli(change=_edit_case(shapes__dres=[4, 9]), sample="residual"),
        r"dres must have the shape of x \(dres \[4, 9\], x \[4, 8\]\)\."),
    Row("cli", "case.json: dres shape without dtype", cli(change=_drop("dtypes", "dres"), sample="residual"),
        r"case\.json is not a valid case description \(no shape or dtype for dres\)"),
    Row("cli", "case.json: dres dtype without shape", cli(change=_drop("shapes", "dres"), sample="residual"),
        r"case\.json is not a valid case description \(no shape or dtype for dres\)"),
    Row("cli", "case.json: gamma_offset Infinity", cli(change=_edit_case(attrs__gamma_offset=math.inf)),
        r"case\.json is not a valid case description \(gamma_offset must be finite in float32 \(got inf\)\.\)"),
    Row("cli", "case.json: gamma_offset 1 without gamma", cli(change=_edit_case(attrs__gamma_offset=1.0), sample="no_gamma"),
        r"gamma_offset must be 0 without gamma \(got 1\)\."),
    Row("cli", "case.json: gamma float16 beside float32 x", cli(change=_edit_case(dtypes__gamma="float16")),
        r"gamma must have the dtype of x, or be float32 \(gamma float16, x float32\)\."),
    Row("cli", "case.json: dx float16 beside float32 x", cli(change=_edit_case(dtypes__dx="float16")),
        r"case\.json is not a valid case description \(dx must have the dtype of x \(dx float16, x float32\)\.\)"),
    Row("cli", "case.json: dgamma [8] without gamma", cli(change=_edit_case(shapes__dgamma=[8]), sample="no_gamma"),
        r"case\.json is not a valid case description \(dgamma must be empty, shaped \[0\], without gamma \(got \[8\]\)\.\)"),
    # What stands where a sample directory's file should be, and files the case does not describe.
    Row("cli", "x.bin is a directory", cli(change=lambda d: ((d / "input" / "x.bin").unlink(), (d / "input" / "x.bin").mkdir())),
        r"\S+/input/x\.bin is a directory; it must be a regular file \(listed in \S+/case\.json\)"),
    Row("cli", "x.bin is a FIFO", cli(change=lambda d: ((d / "input" / "x.bin").unlink(), os.mkfifo(d / "input" / "x.bin"))),
        r"\S+/input/x\.bin is a FIFO; it must be a regular file \(listed in \S+/case\.json\)"),
    Row("cli", "case.json is a directory", cli(change=lambda d: ((d / "case.json").unlink(), (d / "case.json").mkdir())),
        r"\S+/case\.json is a directory; it must be a regular file"),
    Row("cli", "case.json not UTF-8", cli(change=lambda d: (d / "case.json").write_bytes(b"\xff\xfe{")),
        r"case\.json is not a valid case description \(not UTF-8 text: "),
    Row("cli", "stray gamma.bin in a no-gamma sample",
        cli(change=lambda d: np.ones(8, np.float32).tofile(d / "input" / "gamma.bin"), sample="no_gamma"),
        r"\S+/input/gamma\.bin is not part of this case: \S+/case\.json describes no gamma; remove the file or give "
        r"gamma a shape and dtype in case\.json"),
    Row("cli", "stray dres.bin in a sample without dres", cli(change=_write_ones("dres", 32, np.float32)),
        r"\S+/input/dres\.bin is not part of this case: \S+/case\.json describes no dres"),
    Row("cli", "golden_dx.bin missing beside golden_dgamma.bin",
        cli(change=lambda d: (d / "output" / "golden_dx.bin").unlink()),
        r"\S+/output/golden_dx\.bin is missing while \S+/output/golden_dgamma\.bin is there: a sample directory "
        r"holds the golden of every output or of none"),
    Row("cli", "--save-dir is a file", cli("--save-dir", "{tmp}/a_file"), r"'--save-dir': \S+/a_file exists and is not an empty directory"),
]


def _tensor_row(row: Row, rng):
    """Runs a tensor row on its surface (options: simulate's or compute_tiling's keywords, the torch
    op's attributes)."""
    if row.surface == "api":
        simulate(*row.spec.arrays(rng), **row.options)
    elif row.surface == "tiling":
        kwargs = {f"{n}_shape": None if s is None else list(s) for n, s in row.spec.shapes().items()}
        kwargs.update({f"{n}_dtype": d for n, d in row.spec.dtypes().items()})
        _tiling.compute_tiling(**kwargs, **row.options)
    else:
        torch = pytest.importorskip("torch", reason="the torch operator needs torch")
        import rmsnorm_backward.torch  # noqa: F401  (registers torch.ops.rmsnorm_backward)

        def tensor(a):  # NumPy has no torch bf16: a bf16 array's bytes are viewed as torch.bfloat16
            if a.dtype.name == "bfloat16":
                return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
            return torch.from_numpy(a)

        tensors = [None if a is None else tensor(a) for a in row.spec.arrays(rng)]
        torch.ops.rmsnorm_backward.rms_norm_backward(*tensors, **row.options)


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    """sample_dir(name): the valid sample directory of SAMPLES[name], written by the CLI itself once
    per module, when a row first needs it."""
    made = {}

    def get(name: str) -> Path:
        if name not in made:
            d = tmp_path_factory.mktemp("sample") / name
            done = run_cli([*SAMPLES[name], "--save-dir", str(d)])
            assert done.returncode == 0, done.stderr
            made[name] = d
        return made[name]
    return get


def run_cli(argv):
    return subprocess.run([sys.executable, "-m", "rmsnorm_backward.cli", "golden", "--json", *argv],
                          capture_output=True, text=True, timeout=300)


def _cli_row(row: Row, tmp_path: Path, sample_dir):
    argv, change, sample = row.spec
    (tmp_path / "a_file").write_text("not a directory\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if change is not None:
        shutil.copytree(sample_dir(sample), tmp_path / "case")
        change(tmp_path / "case")
        argv += ["--from-dir", str(tmp_path / "case")]
    if "--save-dir" not in argv:
        argv += ["--save-dir", str(tmp_path / "out")]
    done = run_cli(argv)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    *hint, error = done.stderr.strip().splitlines()
    assert [line for line in hint if line and not line.startswith(("Usage: ", "Try "))] == [], done.stderr
    assert error.startswith("Error: "), done.stderr
    assert not (tmp_path / "out").exists(), "a failed run left files in --save-dir"
    assert (tmp_path / "a_file").read_text() == "not a directory\n"
    return error


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.surface}: {r.case}" for r in ROWS])
def test_bad_input_gets_one_clear_sentence(row, rng, tmp_path, request):
    if row.surface == "cli":
        line = _cli_row(row, tmp_path, request.getfixturevalue("sample_dir"))
        assert re.search(row.message, line), line
        return
    with pytest.raises(InvalidInputError, match=row.message) as raised:
        _tensor_row(row, rng)
    assert "\n" not in str(raised.value)

