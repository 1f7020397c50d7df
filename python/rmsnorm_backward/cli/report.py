# SPDX-License-Identifier: BSD-3-Clause
"""PERFORMANCE.md from one bench report and one sensitivity report, both written by bench --json:

\b
    rmsnorm-backward bench --suite all --json all.json
    rmsnorm-backward bench --suite all --overlap 1 --json all_overlap1.json
    rmsnorm-backward bench --suite all --sensitivity --json sensitivity.json
    rmsnorm-backward report all.json sensitivity.json --other-overlap all_overlap1.json -o PERFORMANCE.md

Every figure comes from the two reports (all modelled); each table names the commit it was measured
at. The prose is the template rmsnorm_backward/perf/report.md.j2.
"""
from __future__ import annotations

from pathlib import Path

import click

from ._common import CONTEXT, print_json, save_file, writable_file


@click.command("report", context_settings=CONTEXT, help=__doc__,
               short_help="PERFORMANCE.md rendered from a bench and a sensitivity JSON report")
@click.argument("bench_json", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("sensitivity_json", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="write the Markdown to FILE (atomically) instead of printing it")
@click.option("--other-overlap", "other_json", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="a bench report of the same cases at another hbm_phase_overlap (bench --overlap): the headline "
                   "shows each ratio at both")
@click.option("--json", "as_json", is_flag=True,
              help="print what the report shows (headline, goals, misses, sensitivity verdicts) as JSON instead")
def command(bench_json, sensitivity_json, output, other_json, as_json) -> int:
    from ..perf import report

    if output is not None:
        writable_file("--output", output)
    bench = report.load_bench(bench_json)
    sensitivity = report.load(sensitivity_json, "the sensitivity report", report.SENSITIVITY_KEYS)
    other = None if other_json is None else report.load_bench(other_json, "the other-overlap bench report")
    if as_json:
        print_json(report.context(bench, sensitivity, other))
        return 0
    text = report.render(bench, sensitivity, other)
    if output is None:
        click.echo(text, nl=False)
    else:
        save_file("--output", output, text)
    return 0
