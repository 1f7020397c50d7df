# SPDX-License-Identifier: BSD-3-Clause
"""The performance goals against the anchor kernel and the roofline, in one place: the bench report,
the sensitivity run, PERFORMANCE.md and tests/perf/test_goals.py all judge by these (every figure
they judge is modelled). The anchor kernel is CANN's own RmsNormGrad (perf.cann).

- ours at least GOAL x the anchor kernel, dgamma atomic and deterministic, on every case;
- at least STRONG x wherever the anchor is more than MARGIN x the bound (the restated roofline plus
  the launch, the fastest any kernel can be under the model: every read from HBM, the writes only
  where L2 cannot hold them; the anchor's time over it is its ceiling, the most any kernel could gain
  over it);
- at least ROOFLINE_PCT % of the restated roofline with the launch excluded on every llm case;
- at least TARGETS[suite] x the anchor kernel (both modes) on the cases that measure bandwidth: whose
  minimum bytes exceed TARGET_MIN_BYTES (below, the launch is most of any kernel's time) and whose dx
  fits the SoC's L2 (a larger dx reaches HBM whatever the kernel does, so the anchor's ceiling is low).
"""
from __future__ import annotations

from ..op_def import dtype_of

GOAL, STRONG, MARGIN, ROOFLINE_PCT = 1.0, 1.15, 1.03, 90.0
TARGETS = {"llm": 1.5, "mid": 1.3, "small": 1.3, "atb": 1.3}
TARGET_MIN_BYTES = 16 << 20
# The anchor kernel's dgamma modes: (the bench row's key prefix, name).
MODES = (("anchor_kernel", "atomic"), ("anchor_kernel_deterministic", "deterministic"))
# The suite whose cases the roofline goal covers.
ROOFLINE_SUITE = "llm"


def label(row: dict) -> str:
    return "x".join(map(str, row["shape"])) + " " + row["dtype"]


def speedup(row: dict, mode: str) -> float:
    """Ours over the anchor in `mode`, from the times (so a row whose times were shifted stays right)."""
    return row[f"{mode}_us"] / row["modelled_us"]


def ceiling(row: dict, mode: str, launch_us: float) -> float:
    """The anchor's modelled time in `mode` over the bound (restated roofline + launch; a report
    written before the bound was restated has only the roofline, the bound of its model)."""
    return row[f"{mode}_us"] / (row.get("restated_roofline_us", row["roofline_us"]) + launch_us)


def targeted(row: dict, l2_bytes: int) -> bool:
    """Whether the target covers `row`: minimum bytes past TARGET_MIN_BYTES and dx within L2."""
    dx_bytes = row["rows"] * row["cols"] * dtype_of(row["dtype"]).itemsize
    return row["min_bytes"] > TARGET_MIN_BYTES and dx_bytes <= l2_bytes


def misses(row: dict, mode: str, launch_us: float) -> tuple[bool, bool]:
    """(below GOAL, a STRONG miss) for `row` in `mode`."""
    s = speedup(row, mode)
    return s < GOAL, ceiling(row, mode, launch_us) > MARGIN and s < STRONG


def conclusions(rows: dict[str, list[dict]], launch_us: float, *, l2_bytes: int) -> dict:
    """Each goal over `rows` ({suite: bench rows}) on a SoC of `l2_bytes` of L2: the cases it covers and
    those where it fails, as [label, figure] (the strong goal's and the target's also with whether the
    ceiling leaves the ratio within reach)."""
    out = {name: {"cases": 0, "fails": []} for name in STATEMENTS}
    for suite, suite_rows in rows.items():
        for r in suite_rows:
            if suite == ROOFLINE_SUITE:
                out["roofline"]["cases"] += 1
                if r["kernel_restated_pct"] < ROOFLINE_PCT:
                    out["roofline"]["fails"].append([label(r), r["kernel_restated_pct"]])
            if r.get("anchor_kernel_us") is None:
                continue
            out["goal"]["cases"] += 1
            worst = min(speedup(r, mode) for mode, _ in MODES)
            if worst < GOAL:
                out["goal"]["fails"].append([label(r), worst])
            strong = [mode for mode, _ in MODES if ceiling(r, mode, launch_us) > MARGIN]
            if strong:
                out["strong"]["cases"] += 1
                mode = min(strong, key=lambda m: speedup(r, m))
                if speedup(r, mode) < STRONG:
                    out["strong"]["fails"].append([label(r), speedup(r, mode), ceiling(r, mode, launch_us) >= STRONG])
            if targeted(r, l2_bytes):
                target = TARGETS[suite]
                out["target"]["cases"] += 1
                mode = min((m for m, _ in MODES), key=lambda m: speedup(r, m))
                if speedup(r, mode) < target:
                    out["target"]["fails"].append([label(r), speedup(r, mode), ceiling(r, mode, launch_us) >= target])
    return out


# Each goal's column header where a table names the statements below it.
SHORT = {"goal": f">= {GOAL:g}x", "strong": f">= {STRONG:g}x", "roofline": f">= {ROOFLINE_PCT:g} % bound-L",
         "target": f">= {TARGETS['llm']:g}x llm, {TARGETS['mid']:g}x others"}
STATEMENTS = {
    "goal": f"ours >= {GOAL:g}x the anchor (atomic and deterministic)",
    "strong": f"ours >= {STRONG:g}x where the anchor > {MARGIN:g}x the bound",
    "roofline": f">= {ROOFLINE_PCT:g} % of the restated roofline, launch excluded ({ROOFLINE_SUITE})",
    "target": f"ours >= {TARGETS['llm']:g}x the anchor on llm cases and >= {TARGETS['mid']:g}x on the others "
              f"(atomic and deterministic) where the minimum bytes exceed {TARGET_MIN_BYTES >> 20} MiB and dx fits L2",
}


def verdict(name: str, result: dict, most: int = 3) -> str:
    """One table cell: 'holds (n)', or how many of the covered cases fail, the worst first."""
    n, fails = result["cases"], result["fails"]
    if not n:
        return "-"
    if not fails:
        return f"holds ({n})"
    reach = ""
    if name in ("strong", "target"):
        out_of_reach = sum(not f[2] for f in fails)
        reach = f"; {out_of_reach} out of reach" if out_of_reach else ""
    return f"fails {len(fails)} of {n}{reach}" + (f": {worst_cases(name, fails, most)}" if most else "")


def worst_cases(name: str, fails: list, most: int) -> str:
    """The `most` worst failing cases with their figures, and how many more there are."""
    unit, digits = (" %", 1) if name == "roofline" else ("x", 3)
    shown = ", ".join(f"{f[0]} {f[1]:.{digits}f}{unit}" for f in sorted(fails, key=lambda f: f[1])[:most])
    return shown + (f", +{len(fails) - most}" if len(fails) > most else "")
