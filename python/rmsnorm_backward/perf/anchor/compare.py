# SPDX-License-Identifier: BSD-3-Clause
"""The anchor comparison of bench JSONs as Markdown tables (all figures modelled):

    rmsnorm-backward bench --suite all --json anchor.json && python -m rmsnorm_backward.perf.anchor.compare anchor.json

(several bench JSONs of the same SoC, e.g. one per suite, are read as one).

The goals (rmsnorm_backward.perf.goals): ours at least GOAL x the anchor kernel (dgamma atomic and deterministic) on every case, and
at least STRONG x wherever the anchor is more than MARGIN x the bound. The bound is the fastest any
kernel can be under the model: the roofline plus the launch cost; the anchor's time over it is the
ceiling, the most any kernel could gain over the anchor. Per suite: the speed-ups' spread, the cases
below GOAL and the STRONG misses (with how many of them the ceiling makes reachable at all); then
each case that misses a goal, with what bounds ours and the anchor there and the ceilings.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from rmsnorm_backward.perf.goals import GOAL, MARGIN, MODES, STRONG, ceiling, misses
from rmsnorm_backward.perf.suites import suite_of


def summary(rows: list[dict], launch_us: float) -> list[str]:
    out = [f"| suite | cases | ours / anchor (atomic): min, median, max | < {GOAL}x | {STRONG}x misses (reachable) "
           f"| ours / anchor (deterministic): min, median, max | < {GOAL}x | {STRONG}x misses (reachable) |",
           "|---|---:|---|---:|---:|---|---:|---:|"]
    for name in dict.fromkeys(suite_of(r) for r in rows):
        mine = [r for r in rows if suite_of(r) == name]
        cells = [name, str(len(mine))]
        for mode, _ in MODES:
            values = [r[f"{mode}_speedup"] for r in mine]
            strong = [r for r in mine if misses(r, mode, launch_us)[1]]
            reachable = sum(ceiling(r, mode, launch_us) >= STRONG for r in strong)
            cells += [f"{min(values):.2f}, {statistics.median(values):.2f}, {max(values):.2f}",
                      str(sum(misses(r, mode, launch_us)[0] for r in mine)), f"{len(strong)} ({reachable})"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def close_cases(rows: list[dict], launch_us: float) -> list[str]:
    out = ["| case | suite | ours us | ours path, bound, % roofline | anchor us (atomic, det) | anchor path, bound "
           "| ours / anchor (atomic, det) | ceiling (atomic, det) |", "|---|---|---:|---|---|---|---|---|"]
    for r in rows:
        if not any(any(misses(r, mode, launch_us)) for mode, _ in MODES):
            continue
        label = "x".join(map(str, r["shape"])) + " " + r["dtype"]
        out.append(f"| {label} | {suite_of(r)} | {r['modelled_us']:.1f} | {r['path']}, {r['bottleneck']}, "
                   f"{r['roofline_pct']:.0f} % | {r['anchor_kernel_us']:.1f}, {r['anchor_kernel_deterministic_us']:.1f} "
                   f"| {r['anchor_kernel']['path']}, {r['anchor_kernel']['bottleneck']} "
                   f"| {r['anchor_kernel_speedup']:.3f}, {r['anchor_kernel_deterministic_speedup']:.3f} "
                   f"| {ceiling(r, 'anchor_kernel', launch_us):.3f}, "
                   f"{ceiling(r, 'anchor_kernel_deterministic', launch_us):.3f} |")
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: compare.py BENCH.json... (from rmsnorm-backward bench --json)", file=sys.stderr)
        return 2
    reports = [json.loads(Path(name).read_text()) for name in argv]
    if len({(r["soc"], json.dumps(r["constants"], sort_keys=True)) for r in reports}) != 1:
        print("the bench JSONs must come from one SoC and one set of model constants", file=sys.stderr)
        return 2
    report = reports[0]
    rows, launch_us = [case for r in reports for case in r["cases"]], report["constants"]["launch_us"]
    if any(r.get("anchor_kernel_us") is None for r in rows):
        print("a bench JSON has no anchor kernel columns: write it with rmsnorm-backward bench --json", file=sys.stderr)
        return 2
    print(f"Modelled on {report['soc']}; speed-up = the anchor kernel's modelled time / ours.\n")
    print("\n".join(summary(rows, launch_us)))
    print(f"\nCases below {GOAL}x, or below {STRONG}x where the anchor is more than {MARGIN}x the bound, "
          "in either mode:\n")
    print("\n".join(close_cases(rows, launch_us)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
