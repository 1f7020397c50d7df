"""PERFORMANCE.md's "The anchor kernel" tables from a bench JSON (all figures modelled):

    rmsnorm-backward bench --suite all --json anchor.json && python -m rmsnorm_backward.perf.anchor.compare anchor.json

(several bench JSONs of the same SoC, e.g. one per suite, are read as one).

Per suite: ours / anchor kernel (dgamma atomic) and ours / anchor kernel (deterministic) as speed-ups
(the anchor's modelled time over ours), how many cases fall below 1.0x and 1.1x, and each such case
with what bounds ours and the anchor there and the ceiling: the anchor's time over the roofline plus
the launch cost, the most any kernel could gain over it under this model. ATB cases whose anchor time is at most twice the launch
cost are marked: the issue's goal leaves them out.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from rmsnorm_backward.perf.suites import SUITES, Case

MODES = (("anchor_kernel_speedup", "atomic"), ("anchor_kernel_deterministic_speedup", "deterministic"))


def suite_of(row: dict) -> str:
    case = Case(tuple(row["shape"]), row["dtype"])
    return next(name for name, cases in SUITES.items() if name != "all" and case in cases)


def launch_bound(row: dict, launch_us: float) -> bool:
    return suite_of(row) == "atb" and row["anchor_kernel_us"] <= 2 * launch_us


def summary(rows: list[dict], launch_us: float) -> list[str]:
    out = ["| suite | cases | ours / anchor (atomic): min, median, max | < 1.0x | < 1.1x "
           "| ours / anchor (deterministic): min, median, max | < 1.0x | < 1.1x |", "|---|---:|---|---:|---:|---|---:|---:|"]
    for name in dict.fromkeys(suite_of(r) for r in rows):
        mine = [r for r in rows if suite_of(r) == name and not launch_bound(r, launch_us)]
        if not mine:
            continue
        cells = [name, str(len(mine))]
        for key, _ in MODES:
            values = [r[key] for r in mine]
            cells += [f"{min(values):.2f}, {statistics.median(values):.2f}, {max(values):.2f}",
                      str(sum(v < 1.0 for v in values)), str(sum(v < 1.1 for v in values))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def close_cases(rows: list[dict], launch_us: float) -> list[str]:
    out = ["| case | suite | ours us | ours path, bound, % roofline | anchor us (atomic, det) | anchor path, bound "
           "| ours / anchor (atomic, det) | ceiling (atomic, det) |", "|---|---|---:|---|---|---|---|---|"]
    for r in rows:
        if min(r[key] for key, _ in MODES) >= 1.1:
            continue
        note = " (launch-bound: outside the goal)" if launch_bound(r, launch_us) else ""
        label = "x".join(map(str, r["shape"])) + " " + r["dtype"]
        floor = r["roofline_us"] + launch_us
        out.append(f"| {label}{note} | {suite_of(r)} | {r['modelled_us']:.1f} | {r['path']}, {r['bottleneck']}, "
                   f"{r['roofline_pct']:.0f} % | {r['anchor_kernel_us']:.1f}, {r['anchor_kernel_deterministic_us']:.1f} "
                   f"| {r['anchor_kernel']['path']}, {r['anchor_kernel']['bottleneck']} "
                   f"| {r['anchor_kernel_speedup']:.3f}, {r['anchor_kernel_deterministic_speedup']:.3f} "
                   f"| {r['anchor_kernel_us'] / floor:.3f}, {r['anchor_kernel_deterministic_us'] / floor:.3f} |")
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
    print("\nCases below 1.1x in either mode:\n")
    print("\n".join(close_cases(rows, launch_us)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
