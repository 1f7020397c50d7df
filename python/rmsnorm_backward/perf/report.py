# SPDX-License-Identifier: BSD-3-Clause
"""PERFORMANCE.md, rendered whole from one `bench --json` report and one `bench --sensitivity --json`
report: every figure comes from those two files, each table says the commit it was measured at, and
the prose (the method, the headline's wording, what only an NPU profile can settle) is the template
report.md.j2 beside this. The CLI front end is `rmsnorm-backward report`.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jinja2

from ..errors import InvalidInputError
from . import goals
from .bench import PRECISION_NAMES, format_table
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
    ("%bound-L", 0, lambda r: f"{r['kernel_restated_pct']:.1f}"),
    ("past L2 %", 0, lambda r: f"{r['past_l2_pct']:.0f}"),
    ("bound by", 0, lambda r: r["bottleneck"]),
    ("anchor us", 0, lambda r: f"{r['anchor_kernel_us']:.1f}"),
    ("anchor %roof", 0, lambda r: f"{r['anchor_kernel_roofline_pct']:.1f}"),
    ("x anchor", 0, lambda r: f"{r['anchor_kernel_speedup']:.3f}"),
    ("x det", 0, lambda r: f"{r['anchor_kernel_deterministic_speedup']:.3f}"),
)
BENCH_KEYS = ("soc", "commit", "dirty", "anchor", "soc_facts", "constants", "sources", "cases")
SENSITIVITY_KEYS = ("soc", "commit", "dirty", "constants", "sample", "conclusions", "variants")


def load(path: Path, what: str, keys: tuple[str, ...]) -> dict:
    """The JSON report at `path`; one sentence naming it when it cannot be read or is not a `what`."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"{what} {path} cannot be read ({getattr(e, 'strerror', None) or e})") from None
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"{what} {path} is not JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise InvalidInputError(f"{what} {path} is nested too deeply to be a report") from None
    missing = [k for k in keys if not isinstance(report, dict) or k not in report]
    if missing:
        raise InvalidInputError(f"{what} {path} has no {', '.join(missing)}: write it with this version's "
                                f"rmsnorm-backward bench --json")
    for key, rule, ok in (("soc", "a string", lambda v: isinstance(v, str)),
                          ("commit", "a string or null", lambda v: v is None or isinstance(v, str)),
                          ("constants", "an object", lambda v: isinstance(v, dict))):
        if not ok(report[key]):
            raise InvalidInputError(f"{what} {path} has {key} {report[key]!r}; it must be {rule}")
    return report


# What the report reads of each bench row: (field, rule, test). Times must be positive (the report
# divides by them), figures non-negative; all finite (bench --json writes NaN as the string 'nan').
def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check(v, fields: dict) -> bool:
    return isinstance(v, dict) and all(k in v and ok(v[k]) for k, ok in fields.items())


# One output's check against the golden (crosscheck), as far as the report reads it.
_OUTPUT = {"passed": lambda v: isinstance(v, bool),
           "failed_elements": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
           "allowed_failures": lambda v: _number(v) and v >= 0,
           "max_rel_err": lambda v: v is None or (_number(v) and v >= 0),
           "max_ulp": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)}
_BACKWARD = {"passed": lambda v: isinstance(v, bool), "dx": lambda v: _check(v, _OUTPUT),
             "dgamma": lambda v: _check(v, _OUTPUT)}


ROW_FIELDS = (
    ("shape", "a non-empty list of positive integers",
     lambda v: isinstance(v, list) and bool(v) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                                                       for d in v)),
    ("dtype", f"one of {', '.join(WIDTHS)}", lambda v: isinstance(v, str) and v in WIDTHS),
    ("path", "a string", lambda v: isinstance(v, str)),
    ("bottleneck", "a string", lambda v: isinstance(v, str)),
    ("precision", "null or, per backward, passed and dx and dgamma checks (passed, failed_elements, "
     "allowed_failures, max_rel_err, max_ulp)",
     lambda v: v is None or (isinstance(v, dict) and "ours" in v and all(_check(b, _BACKWARD) for b in v.values()))),
    *((k, "a positive finite number", lambda v: _number(v) and v > 0)
      for k in ("modelled_us", "roofline_us", "restated_roofline_us", "anchor_kernel_us",
                "anchor_kernel_deterministic_us")),
    *((k, "a non-negative finite number", lambda v: _number(v) and v >= 0)
      for k in ("roofline_pct", "kernel_roofline_pct", "kernel_restated_pct", "past_l2_pct",
                "anchor_kernel_roofline_pct", "anchor_kernel_speedup", "anchor_kernel_deterministic_speedup")),
)


def load_bench(path: Path, what: str = "the bench report") -> dict:
    """load() of a bench report, each row checked for what the report reads of it: one sentence naming
    the row and the field otherwise."""
    bench = load(path, what, BENCH_KEYS)
    rows = bench["cases"]
    if not isinstance(rows, list):
        raise InvalidInputError(f"{what} {path}: 'cases' must be a list of rows (got {type(rows).__name__})")
    anchor = bench["anchor"]
    text = lambda v: v is None or isinstance(v, str)  # noqa: E731
    if not (isinstance(anchor, dict) and ("ops_nn" not in anchor or _check(anchor["ops_nn"], {
            "op_sha256": lambda v: isinstance(v, str), "version": text, "commit": text}))):
        raise InvalidInputError(f"{what} {path}: 'anchor' must be an object whose ops_nn, if any, names op_sha256 "
                                f"and a version and commit (each a string or null) (got {anchor!r})")
    launch = bench["constants"].get("launch_us") if isinstance(bench["constants"], dict) else None
    if not (_number(launch) and launch >= 0):
        raise InvalidInputError(f"{what} {path}: constants.launch_us must be a non-negative finite number "
                                f"(got {launch!r})")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InvalidInputError(f"{what} {path}: row {i} of 'cases' must be an object "
                                    f"(got {type(row).__name__})")
        for field, rule, ok in ROW_FIELDS:
            if field not in row:
                raise InvalidInputError(f"{what} {path}: row {i} of 'cases' has no {field}")
            if not ok(row[field]):
                raise InvalidInputError(f"{what} {path}: row {i} of 'cases' has {field} {row[field]!r}; "
                                        f"it must be {rule}")
    return bench


def check(bench: dict, sensitivity: dict, other: dict | None = None) -> None:
    """The reports belong together: one SoC, one set of model constants, anchor columns in every case;
    the other-overlap bench differs in hbm_phase_overlap only and has the same cases."""
    if bench["soc"] != sensitivity["soc"] or bench["constants"] != sensitivity["constants"]:
        raise InvalidInputError("the bench and sensitivity reports must come from one SoC and one set of model "
                                "constants")
    if not bench["cases"] or any(r.get("anchor_kernel_us") is None for r in bench["cases"]):
        raise InvalidInputError("the bench report must have cases, each with the anchor kernel's columns")
    if any(set(c) != set(goals.STATEMENTS) for c in [sensitivity["conclusions"],
                                                     *(v["conclusions"] for v in sensitivity["variants"])]):
        raise InvalidInputError("the sensitivity report must judge every goal of this version ("
                                + ", ".join(goals.STATEMENTS) + "): rerun `bench --sensitivity`")
    if other is None:
        return
    same = {k: v for k, v in other["constants"].items() if k != "hbm_phase_overlap"}
    if other["soc"] != bench["soc"] or same != {k: v for k, v in bench["constants"].items() if k != "hbm_phase_overlap"}:
        raise InvalidInputError("the other-overlap bench report must come from the bench's SoC and constants but "
                                "hbm_phase_overlap")
    if [goals.label(r) for r in other["cases"]] != [goals.label(r) for r in bench["cases"]]:
        raise InvalidInputError("the other-overlap bench report must have the bench report's cases, in its order")


def by_suite(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(suite_of(r), []).append(r)
    return out


def span(values, digits: int, unit: str = "") -> str:
    lo, hi = (f"{v:.{digits}f}" for v in (min(values), max(values)))
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def headline(suites: dict[str, list[dict]], others: dict[str, list[dict]] | None = None) -> list[dict]:
    """One line per shape class (suite x dtype width): the ranges of ours / anchor in both modes (at the
    bench's hbm_phase_overlap, and at the other report's after a slash), of ours % of the roofline and
    of the restated bound with the launch excluded, and of the share of bytes read past L2."""
    out = []
    for suite, rows in suites.items():
        for width in dict.fromkeys(WIDTHS[r["dtype"]] for r in rows):
            def ratio(mode: str) -> str:
                text = span([goals.speedup(r, mode) for r in rows if WIDTHS[r["dtype"]] == width], 2, "x")
                if others is not None:
                    alt = [goals.speedup(r, mode) for r in others[suite] if WIDTHS[r["dtype"]] == width]
                    text += " / " + span(alt, 2, "x")
                return text

            mine = [r for r in rows if WIDTHS[r["dtype"]] == width]
            out.append({"suite": suite, "width": width, "cases": len(mine),
                        "paths": ", ".join(dict.fromkeys(r["path"] for r in mine)),
                        "atomic": ratio("anchor_kernel"), "deterministic": ratio("anchor_kernel_deterministic"),
                        "roofline": span([r["kernel_roofline_pct"] for r in mine], 1, " %"),
                        "restated": span([r["kernel_restated_pct"] for r in mine], 1, " %"),
                        "past_l2": ", ".join(f"{p} {span([r['past_l2_pct'] for r in mine if r['path'] == p], 0, ' %')}"
                                             for p in dict.fromkeys(r["path"] for r in mine))})
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
                        "bound": r["restated_roofline_us"] + launch_us})
    return out


def _largest(rows: list[dict], who: str, output: str, key: str):
    values = [r["precision"][who][output][key] for r in rows if r["precision"][who][output][key] is not None]
    return max(values) if values else None


def precision(rows: list[dict]) -> dict | None:
    """The golden checks of the bench rows (None where the report has none): per backward and dtype the
    cases that pass, the largest dx and dgamma errors and the misses; and, per dtype and output, which
    of ours and CANN's (atomic) has the smaller largest relative error."""
    checked = [r for r in rows if r.get("precision")]
    if not checked:
        return None
    table, misses = [], []
    for who, name in PRECISION_NAMES.items():
        for dtype in dict.fromkeys(r["dtype"] for r in checked):
            mine = [r for r in checked if r["dtype"] == dtype and who in r["precision"]]
            if not mine:
                continue
            ulp = _largest(mine, who, "dx", "max_ulp")
            table.append({"who": name, "dtype": dtype, "cases": len(mine),
                          "passed": sum(r["precision"][who]["passed"] for r in mine),
                          "dx_rel": _largest(mine, who, "dx", "max_rel_err"), "dx_ulp": "-" if ulp is None else ulp,
                          "dgamma_rel": _largest(mine, who, "dgamma", "max_rel_err")})
            misses += [{"who": name, "label": goals.label(r), "output": output,
                        "failed": r["precision"][who][output]["failed_elements"],
                        "allowed": r["precision"][who][output]["allowed_failures"],
                        "max_rel": r["precision"][who][output]["max_rel_err"]}
                       for r in mine for output in ("dx", "dgamma") if not r["precision"][who][output]["passed"]]
    closer = []
    for dtype in dict.fromkeys(r["dtype"] for r in checked):
        both = [r for r in checked if r["dtype"] == dtype and "anchor_kernel" in r["precision"]]
        for output in ("dx", "dgamma") if both else ():
            ours, theirs = (_largest(both, who, output, "max_rel_err") for who in ("ours", "anchor_kernel"))
            closer.append({"dtype": dtype, "output": output, "ours": ours, "cann": theirs,
                           "smaller": "ours" if ours < theirs else "CANN's" if theirs < ours else "equal"})
    return {"table": table, "misses": misses, "closer": closer}


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


def context(bench: dict, sensitivity: dict, other: dict | None = None) -> dict:
    """Everything report.md.j2 shows, computed from the two reports (and the bench at the other
    hbm_phase_overlap, when given)."""
    check(bench, sensitivity, other)
    launch_us = bench["constants"]["launch_us"]
    suites = by_suite(bench["cases"])
    found = goals.conclusions(suites, launch_us, l2_bytes=bench["soc_facts"]["l2_bytes"])
    base = sensitivity["conclusions"]
    return {
        "soc": bench["soc"], "facts": bench["soc_facts"], "constants": bench["constants"], "launch_us": launch_us,
        "kinds": {name: kind(source) for name, source in bench["sources"].items()},
        "bench_at": measured_at(bench), "sensitivity_at": measured_at(sensitivity), "anchor": bench["anchor"],
        "precision": precision(bench["cases"]),
        "headline": headline(suites, by_suite(other["cases"]) if other else None),
        "overlaps": [bench["constants"]["hbm_phase_overlap"]] + ([other["constants"]["hbm_phase_overlap"]] if other else []),
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


def render(bench: dict, sensitivity: dict, other: dict | None = None) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE).render(**context(bench, sensitivity, other))
