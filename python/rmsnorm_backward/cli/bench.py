# SPDX-License-Identifier: BSD-3-Clause
"""The kernel's modelled performance per shape x dtype on one SoC.

Each case runs the real kernel on the CPU twin; the twin's pipeline timeline turns what it counted
into modelled microseconds (no NPU is involved: every figure is modelled, see PERFORMANCE.md).
Columns: modelled us, HBM bytes / minimum, link bytes / minimum, % of the roofline, core balance
(mean / busiest core), vector lane utilisation, the busiest core's bottleneck, the anchor kernel's us
(a model of ops-nn's A2 RmsNormGrad schedule as our Ascend C kernel on the same twin and timeline,
benchmarks/anchor/)
with dgamma atomic and deterministic, the anchor formula (a lower bound on the anchor: perfect overlap
of its pipes), and our speed-up over each of the three.
--residual models the fused add-RMSNorm backward (the kernel with dres) against the plain backward
plus a separate add (the add as its minimum bytes at HBM bandwidth plus a launch: a lower bound).
--sensitivity reruns a sample of the suite (every suite's with --suite all) with each model constant
nobody measured at half and double its value and reports how those figures move (Markdown).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from .. import host_tiling
from ..perf import SUITES, format_table, load_model, run_case, suite, twin_speed
from ..twin import model_constants
from ..perf.bench import report_header
from ..perf.suites import DTYPES
from ._common import CONTEXT, check_soc, json_text, print_json, progress, save_file, writable_file


def parse_dtypes(ctx, param, text: str) -> list[str]:
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise click.BadParameter(f"must be among {', '.join(DTYPES)}, comma-separated (got {text!r})", ctx, param)
    return dtypes


def check_plot(ctx, param, path: Path | None) -> Path | None:
    """--plot: a .png, and matplotlib importable, both before the bench starts."""
    if path is None:
        return None
    if path.suffix.lower() != ".png":
        raise click.BadParameter(f"must name a .png file (got {str(path)!r})", ctx, param)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise click.BadParameter("needs matplotlib, which is not installed: pip install 'rmsnorm-backward[plot]'",
                                 ctx, param) from None
    return path


@click.command("bench", context_settings=CONTEXT, help=__doc__,
               short_help="modelled performance of the kernel per shape and dtype, beside the roofline and the anchor")
@click.option("--soc", default=host_tiling.DEFAULT_SOC, show_default=True, callback=check_soc, help="SoC to model")
@click.option("--suite", "suite_name", type=click.Choice(list(SUITES)), default="llm", show_default=True,
              help="which cases")
@click.option("--dtype", "dtypes", default=",".join(DTYPES), show_default=True, callback=parse_dtypes,
              help="only these dtypes, comma-separated")
@click.option("--max-elements", type=click.IntRange(min=1), metavar="N",
              help="skip cases with more than N elements (for a quick run)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="seed of the random inputs")
@click.option("--overlap", type=click.FloatRange(0.0, 1.0), default=None, metavar="O",
              help="run at hbm_phase_overlap O instead of the model's value (report --other-overlap shows both)")
@click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
              help="write the results as JSON to FILE (no FILE: print JSON instead of the table)")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), callback=check_plot, metavar="FILE.png",
              help="draw ours, the anchor kernel (both modes), the lower bound and the roofline per case (needs the [plot] extra: matplotlib)")
@click.option("--markdown", is_flag=True, help="print the table in Markdown")
@click.option("--twin-speed", "with_twin_speed", is_flag=True,
              help="also time the twin against NumPy float32 on 4096x4096 (wall clock, best of 3)")
@click.option("--sensitivity", "with_sensitivity", is_flag=True,
              help="rerun a sample with each assumed model constant halved and doubled (slow: minutes)")
@click.option("--residual", "with_residual", is_flag=True,
              help="the fused add-RMSNorm backward (dres) against the plain backward plus a separate add")
def command(soc, suite_name, dtypes, max_elements, seed, overlap, json_out, plot, markdown, with_twin_speed,
            with_sensitivity, with_residual) -> int:
    if with_sensitivity and with_residual:
        raise click.UsageError("--residual cannot be combined with --sensitivity")
    if overlap is not None and (with_sensitivity or with_residual):
        raise click.UsageError("--overlap cannot be combined with --sensitivity or --residual")
    if with_sensitivity:
        return sensitivity_command(soc, suite_name, dtypes, max_elements, seed, json_out, plot, with_twin_speed)
    cases = [c for c in suite(suite_name, dtypes) if max_elements is None or c.rows * c.cols <= max_elements]
    if not cases:
        raise click.UsageError(f"no case of suite {suite_name!r} is left with --dtype {','.join(dtypes)} and "
                               f"--max-elements {max_elements}")
    if with_residual:
        return residual_command(soc, suite_name, cases, seed, json_out, plot, markdown, with_twin_speed)
    json_file = None if json_out in (None, "-") else Path(json_out)
    for option, path in (("--json", json_file), ("--plot", plot)):
        if path is not None:
            writable_file(option, path)
    model = load_model(soc)
    if overlap is not None:
        model = replace(model, constants={**model.constants, "hbm_phase_overlap": overlap})
    with model_constants({"hbm_phase_overlap": model["hbm_phase_overlap"]}):
        rows = run_cases(cases, f"bench {suite_name} on {soc}", json_out != "-",
                         lambda case, rng: run_case(case, model, rng, anchor_kernel=True), seed)
    report = {**report_header(model), "suite": suite_name, "cases": rows}
    if with_twin_speed:
        report["twin_speed"] = twin_speed(rng=np.random.default_rng(seed), soc=soc)
    if plot is not None:
        from ..perf.plot import render_png

        save_file("--plot", plot, render_png(rows, f"RmsNormBackward on {soc}, suite {suite_name} (modelled)"))
    if json_report(report, json_out, json_file):
        return 0
    click.echo(f"RmsNormBackward on {soc} (all figures modelled by the twin's timeline; anchor = CANN RmsNormGrad's "
               f"schedule as a kernel on the same twin, det = its deterministic dgamma, bound = the anchor formula's "
               f"lower bound with perfect overlap; x = speed-up of ours over each)")
    click.echo(format_table(rows, markdown=markdown))
    if with_twin_speed:
        t = report["twin_speed"]
        click.echo(f"twin speed (wall clock, not modelled): {t['twin_seconds']:.3f} s for the kernel on "
                   f"{'x'.join(map(str, t['shape']))} fp32, NumPy float32 {t['numpy_seconds']:.3f} s, ratio {t['ratio']:.2f}")
    return 0


def run_cases(cases, label: str, with_bar: bool, run, seed: int) -> list[dict]:
    """run(case, rng) for each case in order, one random stream for all, under a progress bar."""
    rng = np.random.default_rng(seed)
    rows = []
    with progress(len(cases), label, enabled=with_bar) as bar:
        for case in cases:
            bar.set_postfix_str(case.label)
            rows.append(run(case, rng))
            bar.update()
    return rows


def json_report(report: dict, json_out, json_file: Path | None) -> bool:
    """--json: the report to FILE, or to stdout instead of the table (then True: nothing else to print)."""
    if json_out == "-":
        print_json(report)
        return True
    if json_file is not None:
        save_file("--json", json_file, json_text(report))
    return False


def residual_command(soc, suite_name, cases, seed, json_out, plot, markdown, with_twin_speed) -> int:
    from ..perf import residual

    for option, given in (("--plot", plot is not None), ("--twin-speed", with_twin_speed)):
        if given:
            raise click.UsageError(f"{option} cannot be combined with --residual")
    json_file = None if json_out in (None, "-") else Path(json_out)
    if json_file is not None:
        writable_file("--json", json_file)
    model = load_model(soc)
    rows = run_cases(cases, f"bench --residual {suite_name} on {soc}", json_out != "-",
                     lambda case, rng: residual.run_residual_case(case, model, rng), seed)
    report = {**report_header(model), "suite": suite_name, "residual": True, "cases": rows}
    if json_report(report, json_out, json_file):
        return 0
    click.echo(f"Fused add-RMSNorm backward on {soc} (all figures modelled): fused = one launch with dres; "
               f"unfused = the plain backward (bwd) + a separate add (its minimum bytes at HBM bandwidth plus a "
               f"launch: a lower bound); x unfused = unfused / fused; bytes over the fused form's minimum "
               f"(dy, x, dres, dx once)")
    click.echo(residual.format_table(rows, markdown=markdown))
    return 0


def sensitivity_command(soc, suite_name, dtypes, max_elements, seed, json_out, plot, with_twin_speed) -> int:
    from ..perf import sensitivity

    for option, given in (("--plot", plot is not None), ("--twin-speed", with_twin_speed)):
        if given:
            raise click.UsageError(f"{option} cannot be combined with --sensitivity")
    names = [n for n in SUITES if n != "all"] if suite_name == "all" else [suite_name]
    picked = {name: [c for c in cases if c.dtype in dtypes and (max_elements is None or c.rows * c.cols <= max_elements)]
              for name, cases in sensitivity.sample(names).items()}
    picked = {name: cases for name, cases in picked.items() if cases}
    if not picked:
        raise click.UsageError(f"no sensitivity case of suite {suite_name!r} is left with --dtype {','.join(dtypes)} "
                               f"and --max-elements {max_elements}")
    json_file = None if json_out in (None, "-") else Path(json_out)
    if json_file is not None:
        writable_file("--json", json_file)
    model = load_model(soc)
    runs = sum(map(len, picked.values())) * (1 + len(sensitivity.FACTORS) * len(
        [n for n in sensitivity.varied(model) if n != "launch_us"]))
    with progress(runs, f"sensitivity {suite_name} on {soc}", enabled=json_out != "-") as bar:
        def step(label: str):
            bar.set_postfix_str(label)
            bar.update()

        report = sensitivity.run(model, picked, np.random.default_rng(seed), progress=step)
    if json_report(report, json_out, json_file):
        return 0
    click.echo(f"RmsNormBackward on {soc}: sensitivity to the model constants of kind {' or '.join(sensitivity.VARIED_KINDS)} "
               f"(x{' and x'.join(f'{f:g}' for f in sensitivity.FACTORS)}), all figures modelled; columns give the "
               "spread over the sample of each suite: % of roofline and our speed-up over each anchor")
    click.echo(sensitivity.format_report(report))
    click.echo("\nThe goals on the sample (perf/goals.py) at the baseline and under each variant:\n")
    click.echo(sensitivity.format_conclusions(report))
    return 0
