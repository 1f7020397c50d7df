# SPDX-License-Identifier: BSD-3-Clause
"""Compiles every Ascend C source of a project tree against CANN's headers (CPU-debug mode,
-fsyntax-only and -c) and reports the errors per file.

    python tests/conformance/check.py [--tree DIR] [--mode syntax|object] [--only TEXT] [--jobs N]

Needs ASCEND_HOME_PATH, or ASC_DEVKIT_SRC and ASC_TOOLS_SRC (see real_headers.py); exits 0 when
every source compiles, 1 when one does not, 2 when the headers are not available.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_units import Unit, collect  # noqa: E402
from real_headers import MODES, Headers, Toolchain, locate, per_file  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    unit: Unit
    mode: str
    errors: list[tuple[str, str]]  # (file:line, message)


@dataclass
class Report:
    outcomes: list[Outcome]
    skipped: list[tuple[str, str]]
    standins: list[str]
    origin: str
    shown: int = 3  # errors quoted per source

    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.errors]

    def table(self, tree: Path) -> str:
        """One line per (source, mode): its error count, then the count per file the errors are in."""
        lines = [f"CANN headers: {self.origin}"]
        lines += [f"  filled in: {s}" for s in self.standins]
        for o in self.outcomes:
            counts = per_file(o.errors)
            where = ", ".join(f"{_short(f, tree)}: {n}" for f, n in sorted(counts.items()))
            lines.append(f"{o.mode:6} {len(o.errors):3} errors  {o.unit.name}" + (f"  ({where})" if where else ""))
            lines += [f"         {_short(w, tree)}: {m}" for w, m in o.errors[:self.shown]]
        lines += [f"left out: {name}: {why}" for name, why in self.skipped]
        return "\n".join(lines)


def _short(path: str, tree: Path) -> str:
    return path.replace(str(tree.resolve()) + os.sep, "")


def check(tree: Path, scratch: Path, headers: Headers, modes=tuple(MODES), jobs: int = os.cpu_count() or 1,
          only: str = "") -> Report:
    tree = tree.resolve()
    toolchain = Toolchain(headers, scratch / "headers")
    toolchain.precompile()
    units, skipped = collect(tree, scratch / "units")
    units = [u for u in units if only in u.name]
    own = [tree, scratch / "units"]

    def run(task: tuple[Unit, str]) -> Outcome:
        unit, mode = task
        result = toolchain.compile(unit.source, mode, unit.defines, unit.include_dirs)
        text_name = unit.name.split(" ")[0]  # a kernel text's scratch file is reported by the text's name
        return Outcome(unit, mode, [(where.replace(str(unit.source), text_name), message)
                                    for where, message in result.errors(own)])

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = list(pool.map(run, [(u, m) for m in modes for u in units]))
    return Report(outcomes, skipped, toolchain.standins, headers.origin)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="project tree to check (default: this one)")
    parser.add_argument("--mode", choices=sorted(MODES), action="append", help="default: both")
    parser.add_argument("--errors", type=int, default=3, help="errors quoted per source")
    parser.add_argument("--only", default="", help="only the sources whose name contains this text")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    args = parser.parse_args(argv)
    headers = locate()
    if isinstance(headers, str):
        print(headers, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="conformance_") as scratch:
        report = check(args.tree, Path(scratch), headers, tuple(args.mode or MODES), args.jobs, args.only)
    report.shown = args.errors
    print(report.table(args.tree))
    return 1 if report.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
