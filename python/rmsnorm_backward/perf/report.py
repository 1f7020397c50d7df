# SPDX-License-Identifier: BSD-3-Clause
"""PERFORMANCE.md, rendered whole from one `bench --json` report and one `bench --sensitivity --json`
report: every figure comes from those two files, each table says the commit it was measured at, and
the prose (the method, the headline's wording, what only an NPU profile can settle) is the template
report.md.j2 beside this. The CLI front end is `rmsnorm-backward report`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2

from ..errors import InvalidInputError
from . import goals
from .bench import format_table
from .sensitivity import change_sentences, value_label
from .suites import suite_of

HERE = Path(__file__).resolve().parent
TEMPLATE = "report.md.j2"
WIDTHS = {"fp16": "16-bit", "bf16": "16-bit", "fp32": "fp32"}
# The columns of the results tables (header, width, row -> text); widths only pad the plain form.
COLUMNS = (
    ("case", 0, goals.label),
    ("path", 0, lambda r: r["path"]),
    ("ours us", 0, lambda r: f"{r['modelled_us']:.1f}"),
    ("%roof", 0, lambda r: f"{r['roofline_pct']:.1f}"),
    ("%roof-L", 0, lambda r: f"{r['kernel_roofline_pct']:.1f}"),
    ("bound by", 0, lambda r: r["bottleneck"]),
    ("anchor us", 0, lambda r: f"{r['anchor_kernel_us']:.1f}"),
    ("anchor %roof", 0, lambda r: f"{r['anchor_kernel_roofline_pct']:.1f}"),
    ("x anchor", 0, lambda r: f"{r['anchor_kernel_speedup']:.3f}"),
    ("x det", 0, lambda r: f"{r['anchor_kernel_deterministic_speedup']:.3f}"),
)
BENCH_KEYS = ("soc", "commit", "dirty", "soc_facts", "constants", "sources", "cases")
SENSITIVITY_KEYS = ("soc", "commit", "dirty", "constants", "sample", "conclusions", "variants")


def load(path: Path, what: str, keys: tuple[str, ...]) -> dict:
    """The JSON report at `path`; one sentence naming it when it cannot be read or is not a `what`."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"{what} {path} cannot be read ({getattr(e, 'strerror', None) or e})") from None
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"{what} {path} is not JSON ({e.msg} at line {e.lineno})") from None
    missing = [k for k in keys if not isinstance(report, dict) or k not in report]
    if missing:
        raise InvalidInputError(f"{what} {path} has no {', '.join(missing)}: write it with this version's "
                                f"rmsnorm-backward bench --json")
    return report


def check(bench: dict, sensitivity: dict) -> None:
    """The two reports belong together: one SoC, one set of model constants, anchor columns in every case."""
    if bench["soc"] != sensitivity["soc"] or bench["constants"] != sensitivity["constants"]:
        raise InvalidInputError("the bench and sensitivity reports must come from one SoC and one set of model "
                                "constants")
    if not bench["cases"] or any(r.get("anchor_kernel_us") is None for r in bench["cases"]):
        raise InvalidInputError("the bench report must have cases, each with the anchor kernel's columns")


def by_suite(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(suite_of(r), []).append(r)
    return out


def span(values, digits: int, unit: str = "") -> str:
    lo, hi = (f"{v:.{digits}f}" for v in (min(values), max(values)))
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def headline(suites: dict[str, list[dict]]) -> list[dict]:
    """One line per shape class (suite x dtype width): the ranges of ours / anchor in both modes and of
    ours % of roofline with the launch excluded."""
    out = []
    for suite, rows in suites.items():
        for width in dict.fromkeys(WIDTHS[r["dtype"]] for r in rows):
            mine = [r for r in rows if WIDTHS[r["dtype"]] == width]
            out.append({"suite": suite, "width": width, "cases": len(mine),
                        "paths": ", ".join(dict.fromkeys(r["path"] for r in mine)),
                        "atomic": span([goals.speedup(r, "anchor_kernel") for r in mine], 2, "x"),
                        "deterministic": span([goals.speedup(r, "anchor_kernel_deterministic") for r in mine], 2, "x"),
                        "roofline": span([r["kernel_roofline_pct"] for r in mine], 1, " %")})
    return out


def goal_misses(rows: list[dict], launch_us: float) -> list[dict]:
    """Every case under a goal against the anchor, in the mode it misses worst, with its ceiling."""
    out = []
    for r in rows:
        missed = [mode for mode, _ in goals.MODES if any(goals.misses(r, mode, launch_us))]
        if missed:
            mode = min(missed, key=lambda m: goals.speedup(r, m))
            out.append({"label": goals.label(r), "ours": r["modelled_us"], "anchor": r[f"{mode}_us"],
                        "mode": dict(goals.MODES)[mode], "speedup": goals.speedup(r, mode),
                        "ceiling": goals.ceiling(r, mode, launch_us),
                        "bound": r["roofline_us"] + launch_us})
    return out


def measured_at(report: dict) -> str:
    if report["commit"] is None:
        return "a tree outside git (commit unknown)"
    return f"commit {report['commit'][:7]}" + (" with uncommitted changes" if report["dirty"] else "")


def kind(source: str) -> str:
    """A constant's kind: the first word of its source (measured, guide, range, assumption)."""
    return re.match(r"\w*", source).group()


def against_baseline(name: str, found: dict, baseline: dict) -> str:
    """A sensitivity cell: "the baseline's n" where the same n cases fail as at the baseline, else the
    verdict (holds, or the cases that fail)."""
    fails = {f[0] for f in found["fails"]}
    if found["fails"] and fails == {f[0] for f in baseline["fails"]}:
        return f"the baseline's {len(fails)}"
    return goals.verdict(name, found, most=2)


def context(bench: dict, sensitivity: dict) -> dict:
    """Everything report.md.j2 shows, computed from the two reports."""
    check(bench, sensitivity)
    launch_us = bench["constants"]["launch_us"]
    suites = by_suite(bench["cases"])
    found = goals.conclusions(suites, launch_us)
    base = sensitivity["conclusions"]
    return {
        "soc": bench["soc"], "facts": bench["soc_facts"], "constants": bench["constants"], "launch_us": launch_us,
        "kinds": {name: kind(source) for name, source in bench["sources"].items()},
        "bench_at": measured_at(bench), "sensitivity_at": measured_at(sensitivity),
        "headline": headline(suites),
        "goals": [{"statement": goals.STATEMENTS[n], "verdict": goals.verdict(n, found[n], most=0 if n == "strong" else 6)}
                  for n in found],
        "misses": goal_misses(bench["cases"], launch_us), "strong": goals.STRONG,
        "tables": {suite: format_table(rows, markdown=True, columns=COLUMNS) for suite, rows in suites.items()},
        "sample": sensitivity["sample"],
        "sensitivity": [{"constant": "(baseline)", "value": "-",
                         "verdicts": [goals.verdict(n, base[n], most=2) for n in goals.STATEMENTS]}]
        + [{"constant": v["constant"], "value": value_label(v),
            "verdicts": [against_baseline(n, v["conclusions"][n], base[n]) for n in goals.STATEMENTS]}
           for v in sensitivity["variants"]],
        "short": list(goals.SHORT.values()),
        "changed": change_sentences(sensitivity),
    }


def render(bench: dict, sensitivity: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE).render(**context(bench, sensitivity))
