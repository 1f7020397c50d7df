# SPDX-License-Identifier: BSD-3-Clause
"""Run the operator on the best backend here and compare it with the float64 golden.

Inputs are random (seeded), or read from a directory in the msopgen sample layout that --save-dir
writes:

\b
    D/case.json                  shapes and dtypes of the tensors, the attributes
                                 (gamma_offset), and the files below
    D/input/<dy|x|rstd|gamma|dres>.bin   (only the case's tensors: a stray one is refused)
    D/output/golden_<dx|dgamma>.bin (float64; both, or neither: then it is computed again, with a notice)
    D/output/output_<dx|dgamma>.bin

The defaults are the original operator text's example: x [32,64,128] fp32, rstd [32,64,1], gamma
[128]. Exit status 1 when the precision standard (docs/design.md section 4) fails, 2 for a bad option,
input file or environment.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple, Optional

import click
import numpy as np

from .. import attrs, backends, host_memory, host_tiling, op_def
from ..errors import EnvironmentSetupError, InvalidInputError
from ..fileio import STDOUT, check_writable_dir, followed, names_a_descriptor
from ..golden import golden
from ..precision import compare
from ._common import CONTEXT, CliError, check_soc, os_error, print_json, progress, refusal
from .sample_dir import CASE_FILE, read_case, read_golden, read_inputs, write_sample_dir

EPS = 1e-6  # of the forward pass that produced rstd
# Options that describe the inputs: a sample directory's case.json does that instead.
CASE_OPTIONS = ("shape", "gamma_dims", "rstd_flat", "dtype", "gamma_dtype", "seed", "gamma_offset", "no_gamma", "residual")


def parse_shape(ctx, param, text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        dims = ()
    if not dims or any(d < 0 for d in dims):
        raise click.BadParameter(f"must be non-negative integers separated by commas, like 32,64,128 (got {text!r})",
                                 ctx, param)
    if len(dims) < 2:
        raise click.BadParameter(f"needs at least 2 dims: the rows and the dims of gamma (got {text!r})", ctx, param)
    return dims


def case_from_options(shape: tuple[int, ...], k: int, rstd_flat: bool, dtype: str,
                      gamma_offset: float = attrs.GAMMA_OFFSET, no_gamma: bool = False, residual: bool = False,
                      gamma_dtype: str | None = None) -> dict:
    """The case the options describe; without gamma it has no gamma tensor and dgamma is empty; with
    residual it has dres (x's shape and dtype). InvalidInputError when gamma_offset breaks its rules."""
    if not k < len(shape):
        raise click.BadParameter(f"must be from 1 to {len(shape) - 1} for a {len(shape)}-D --shape (got {k})",
                                 param_hint="'--gamma-dims'")
    rstd = shape[:-k] if rstd_flat else shape[:-k] + (1,) * k
    shapes = {"dy": shape, "x": shape, "rstd": rstd, "gamma": shape[-k:], "dres": shape, "dx": shape,
              "dgamma": shape[-k:]}
    dtypes = _dtypes_for(op_def.dtype_of(dtype).name)
    if gamma_dtype is not None:  # the tiling's rule decides whether the operator takes it
        dtypes["gamma"] = op_def.dtype_of(gamma_dtype).name
    if no_gamma:
        del shapes["gamma"], dtypes["gamma"]
        shapes["dgamma"] = (0,)
    if not residual:
        del shapes["dres"], dtypes["dres"]
    return {"shapes": shapes, "dtypes": dtypes,
            "attrs": attrs.check({"gamma_offset": gamma_offset}, has_gamma=not no_gamma)}


def _dtypes_for(t: str) -> dict:
    """Each tensor's dtype name when the type variable T is `t` (from op_def)."""
    op = op_def.load()
    index = [d.name for d in op.type_values].index(t)
    return {tensor.name: tensor.dtypes[index].name for tensor in op.tensors}


def random_inputs(case: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    shapes, dtypes = case["shapes"], case["dtypes"]
    np_dtype = {n: op_def.DTYPES[d].numpy() for n, d in dtypes.items()}
    x = rng.standard_normal(shapes["x"], dtype=np.float32).astype(np_dtype["x"])
    rows = math.prod(shapes["rstd"])
    mean_sq = (np.mean(np.square(x.astype(np.float64)).reshape(rows, -1), axis=1) if x.size
               else np.zeros(rows))
    inputs = {
        "dy": rng.standard_normal(shapes["dy"], dtype=np.float32).astype(np_dtype["dy"]),
        "x": x,
        "rstd": (1.0 / np.sqrt(mean_sq + EPS)).reshape(shapes["rstd"]).astype(np_dtype["rstd"]),
    }
    if "dres" in shapes:
        inputs["dres"] = rng.standard_normal(shapes["dres"], dtype=np.float32).astype(np_dtype["dres"])
    if "gamma" in shapes:  # the scale gamma + gamma_offset in [0.5, 1.5) whatever the offset (Gemma's gamma is near 0)
        inputs["gamma"] = (rng.uniform(0.5, 1.5, shapes["gamma"]) - case["attrs"]["gamma_offset"]).astype(
            np_dtype["gamma"])
    return inputs


def typed_options(ctx, shape, gamma_dims, rstd_flat, dtype, gamma_dtype, gamma_offset, soc) -> dict:
    """The options that describe the case as the user typed them, by the kind of tiling rule they
    answer for (cli._common.refusal): --shape, with --gamma-dims and --rstd-flat when given; --dtype;
    --gamma-dtype (with --dtype when given) for a rule on gamma's dtype; --gamma-offset; --soc."""
    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT

    shape_options = [f"--shape {','.join(map(str, shape))}"]
    shape_options += [f"--gamma-dims {gamma_dims}"] if given("gamma_dims") else []
    shape_options += ["--rstd-flat"] if given("rstd_flat") else []
    typed = {"shape": " ".join(shape_options), "dtype": f"--dtype {dtype}", "attr": f"--gamma-offset {gamma_offset}",
             "platform": f"--soc {soc}"}
    if gamma_dtype is not None:  # gamma's dtype has an option of its own
        typed["dtype:gamma"] = f"--gamma-dtype {gamma_dtype}" + (f" with --dtype {dtype}" if given("dtype") else "")
    return typed


def _check_save_dir(d: Path, from_dir: Path | None) -> None:
    if from_dir is not None and d.absolute() == from_dir.absolute():
        raise click.BadParameter("must not be the --from-dir directory it reads", param_hint="'--save-dir'")
    if str(d) == STDOUT or names_a_descriptor(d):
        raise click.BadParameter(f"{d} names an open descriptor (standard output), which cannot hold a sample "
                                 "directory; name a new directory", param_hint="'--save-dir'")
    try:
        target = followed(d)  # a symlink: the directory is made where it points
        if target.exists() and not (target.is_dir() and not any(target.iterdir())):  # a FIFO, a device: kept
            raise click.BadParameter(f"{d} exists and is not an empty directory; name a new one",
                                     param_hint="'--save-dir'")
        check_writable_dir(target.parent)
    except OSError as e:
        raise CliError(os_error("--save-dir", d, e)) from None


class Plan(NamedTuple):
    """What a golden run does, every option checked: the case (None while it is still in --from-dir's
    case.json, read with the inputs), where the inputs come from, the backend, where to save."""
    case: Optional[dict]
    seed: int
    from_dir: Optional[Path]
    save_dir: Optional[Path]
    backend: backends.Backend
    soc: str


class Outcome(NamedTuple):
    case: dict
    inputs: dict
    golden_read: bool  # read from --from-dir, else computed here
    details: dict
    reports: dict


def resolve(ctx, shape, gamma_dims, rstd_flat, dtype, gamma_dtype, seed, residual, no_gamma, gamma_offset, soc, backend,
            from_dir, save_dir) -> Plan:
    """The options' plan, or a one-sentence refusal before any array is made."""
    case = None
    if from_dir is not None:
        given = [f"--{n.replace('_', '-')}" for n in CASE_OPTIONS
                 if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
        if given:
            raise click.UsageError(f"--from-dir takes the case from its {CASE_FILE}: drop {', '.join(given)}")
    else:
        if no_gamma and gamma_dtype is not None:
            raise click.UsageError("--gamma-dtype needs a gamma: drop it or --no-gamma")
        try:
            case = case_from_options(shape, gamma_dims, rstd_flat, dtype, gamma_offset, no_gamma, residual, gamma_dtype)
        except InvalidInputError as e:
            hint = "; drop it or --no-gamma" if no_gamma and "without gamma" in str(e) else "."
            raise click.BadParameter(str(e).rstrip(".") + hint, param_hint="'--gamma-offset'") from None
        try:  # before any array is made
            host_memory.golden_run(case["shapes"], case["dtypes"], soc=soc, **case["attrs"])
        except InvalidInputError as e:
            raise refusal(e, typed_options(ctx, shape, gamma_dims, rstd_flat, dtype, gamma_dtype, gamma_offset,
                                           soc)) from None
    if save_dir is not None:
        _check_save_dir(save_dir, from_dir)
    chosen = backends.best() if backend == "auto" else _chosen(backend)
    return Plan(case, seed, from_dir, save_dir, chosen, soc)


def run(plan: Plan, show_progress: bool) -> Outcome:
    """Inputs, golden, the backend's outputs, their comparison, and the sample directory if asked."""
    steps = ["reading the inputs" if plan.from_dir else "making the inputs", "the float64 golden",
             f"running on the {plan.backend.name}", "comparing", "saving"]
    with progress(len(steps), "golden", enabled=show_progress) as bar:
        def step(i: int) -> None:
            bar.set_postfix_str(steps[i])
            bar.update(i - bar.n)

        step(0)
        if plan.from_dir is not None:
            case = read_case(plan.from_dir, plan.soc)
            inputs, gold = read_inputs(plan.from_dir, case), read_golden(plan.from_dir, case)
        else:
            case = plan.case
            inputs, gold = random_inputs(case, plan.seed), None
        golden_read = gold is not None
        step(1)
        dy, x, rstd, gamma, dres = (inputs.get(n) for n in ("dy", "x", "rstd", "gamma", "dres"))
        if gold is None:
            gold = dict(zip(("dx", "dgamma"), golden(dy, x, rstd, gamma, dres=dres, **case["attrs"])))
        step(2)
        dx, dgamma, details = backends.run(plan.backend.name, dy, x, rstd, gamma, dres, soc=plan.soc, **case["attrs"])
        step(3)
        reports = {"dx": compare(dx, gold["dx"], case["dtypes"]["dx"]),
                   "dgamma": compare(dgamma, gold["dgamma"], case["dtypes"]["dgamma"], round_golden=False)}
        step(4)
        if plan.save_dir is not None:
            try:
                write_sample_dir(plan.save_dir, case, inputs, gold, {"dx": dx, "dgamma": dgamma})
            except EnvironmentSetupError as e:
                raise CliError(f"--save-dir {e}") from None
        bar.update(len(steps) - bar.n)
    return Outcome(case, inputs, golden_read, details, reports)


def report(plan: Plan, outcome: Outcome, as_json: bool) -> int:
    """Prints the comparison; 0 when both outputs pass the precision standard, else 1."""
    case, reports = outcome.case, outcome.reports
    passed = all(r.passed for r in reports.values())
    seed = None if plan.from_dir else plan.seed
    if as_json:
        print_json({"op": op_def.load().type, "backend": plan.backend.name, "soc": plan.soc,
                    "shapes": {n: list(s) for n, s in case["shapes"].items()}, "dtypes": case["dtypes"],
                    "attrs": case["attrs"], "seed": seed, "golden": "read" if outcome.golden_read else "computed",
                    "details": outcome.details, "reports": {n: r.to_dict() for n, r in reports.items()},
                    "passed": passed})
        return 0 if passed else 1
    shapes = ", ".join(f"{n} {list(s)}" for n, s in case["shapes"].items() if n in outcome.inputs)
    changed = "".join(f"; {n} {v}" for n, v in case["attrs"].items() if v != attrs.DEFAULTS[n])
    click.echo(f"{op_def.load().type} on {plan.backend.name} ({plan.soc}): {shapes}; {case['dtypes']['x']}{changed}"
               + ("" if seed is None else f"; seed {seed}"))
    for name, result in reports.items():
        click.echo(f"  {name:7s} {result}")
    if outcome.details:
        click.echo("  " + ", ".join(f"{k} {v}" for k, v in outcome.details.items()))
    click.echo("PASS" if passed else "FAIL")
    return 0 if passed else 1


@click.command("golden", context_settings=CONTEXT, help=__doc__,
               short_help="run the operator on the best backend and compare it with the float64 golden")
@click.option("--shape", default="32,64,128", show_default=True, callback=parse_shape,
              help="shape of dy and x, comma-separated")
@click.option("--gamma-dims", type=click.IntRange(min=1), default=1, show_default=True,
              help="k: gamma is the last k dims of x")
@click.option("--rstd-flat", is_flag=True,
              help="shape rstd x.shape[:-k] instead of x.shape[:-k] + (1,)*k (the operator text's form)")
@click.option("--dtype", type=click.Choice([d.short for d in op_def.load().type_values]), default="fp32",
              show_default=True, help="dtype of dy, x, gamma and dx")
@click.option("--gamma-dtype", type=click.Choice([d.short for d in op_def.load().type_values]), default=None,
              help="dtype of gamma (default: --dtype's); fp32 beside fp16/bf16 is mixed precision (fp32 master weights)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="seed of the random inputs")
@click.option("--residual", is_flag=True,
              help="the fused add-RMSNorm backward: a random dres (the residual stream's gradient) is added to dx")
@click.option("--no-gamma", is_flag=True,
              help="the operator without gamma: the scale is 1 and dgamma is empty (none is computed)")
@click.option("--gamma-offset", type=float, default=attrs.GAMMA_OFFSET, show_default=True, metavar="F",
              help="the gamma_offset attribute: the scale is gamma + F (1.0: Gemma's 1 + w); random gamma is "
                   "drawn so that the scale lies in [0.5, 1.5)")
@click.option("--soc", default=host_tiling.DEFAULT_SOC, show_default=True, callback=check_soc, help="SoC the twin simulates")
@click.option("--backend", type=click.Choice(["auto", "twin", "npu"]), default="auto", show_default=True,
              help="where to run: auto is the NPU when usable, else the twin")
@click.option("--from-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), metavar="D",
              help="read inputs (and golden, if present) from D, as described by D/case.json")
@click.option("--save-dir", type=click.Path(path_type=Path), metavar="D",
              help="write inputs, golden and outputs to the new directory D")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.pass_context
def command(ctx, shape, gamma_dims, rstd_flat, dtype, gamma_dtype, seed, residual, no_gamma, gamma_offset, soc, backend,
            from_dir, save_dir, as_json) -> int:
    plan = resolve(ctx, shape, gamma_dims, rstd_flat, dtype, gamma_dtype, seed, residual, no_gamma, gamma_offset, soc,
                   backend, from_dir, save_dir)
    return report(plan, run(plan, show_progress=not as_json), as_json)


def _chosen(name: str) -> backends.Backend:
    backend = backends.twin_backend() if name == "twin" else backends.npu_backend()
    if not backend.usable:
        raise CliError(f"--backend {name} is not usable here: {backend.detail}; {backend.next_step}")
    return backend
