"""`rmsnorm-backward bench`: the kernel's modelled performance per shape x dtype on one SoC.

Each case runs the real kernel on the CPU twin; the twin's pipeline timeline turns what it counted
into modelled microseconds (no NPU is involved: every figure is modelled, see PERFORMANCE.md).
Columns: modelled us, HBM bytes / minimum, link bytes / minimum, % of the roofline, core balance
(mean / busiest core), vector lane utilisation, the busiest core's bottleneck, the anchor model's us
(CANN's RmsNormGrad algorithm under the same constants, perfect overlap) and our speed-up over it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..perf import SUITES, format_table, load_model, run_case, suite, twin_speed
from ..perf.suites import DTYPES
from ._common import CliError, print_json, progress, to_jsonable, write_atomic

HELP = "modelled performance of the kernel per shape and dtype (the twin's timeline), beside the roofline and the anchor"


def add_arguments(p) -> None:
    p.add_argument("--soc", default="Ascend910B2", help="SoC to model (default %(default)s)")
    p.add_argument("--suite", default="llm", choices=list(SUITES), help="which cases (default %(default)s)")
    p.add_argument("--dtype", default=",".join(DTYPES),
                   help="only these dtypes, comma-separated (default %(default)s)")
    p.add_argument("--max-elements", type=int, metavar="N",
                   help="skip cases with more than N elements (for a quick run)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default %(default)s)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the results as JSON to FILE (no FILE: print JSON instead of the table)")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="draw ours, the anchor and the roofline per case")
    p.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    p.add_argument("--twin-speed", action="store_true",
                   help="also time the twin against NumPy float32 on 4096x4096 (wall clock, best of 3)")


def _cases(args):
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    cases = suite(args.suite, dtypes)
    if args.max_elements is not None:
        if args.max_elements < 1:
            raise CliError(f"--max-elements must be a positive integer (got {args.max_elements})")
        cases = [c for c in cases if c.rows * c.cols <= args.max_elements]
    if not cases:
        raise CliError(f"no case of suite {args.suite!r} is left with --dtype {args.dtype} and --max-elements "
                       f"{args.max_elements}")
    return cases


def run(args) -> int:
    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise CliError(f"--plot must name a .png file (got {str(args.plot)!r})")
    model = load_model(args.soc)
    cases = _cases(args)
    rng = np.random.default_rng(args.seed)
    rows = []
    with progress(len(cases), f"bench {args.suite} on {args.soc}", enabled=args.json != "-") as bar:
        for case in cases:
            bar.set_postfix_str(case.label)
            rows.append(run_case(case, model, rng))
            bar.update()
    report = {"soc": args.soc, "suite": args.suite, "modelled": True, "constants": model.constants,
              "cases": rows}
    if args.twin_speed:
        report["twin_speed"] = twin_speed(rng=rng, soc=args.soc)
    if args.plot is not None:
        try:
            from ..perf.plot import render_png
            png = render_png(rows, f"RmsNormBackward on {args.soc}, suite {args.suite} (modelled)")
        except ImportError:
            raise CliError("--plot needs matplotlib, which is not installed (pip install matplotlib)") from None
        write_atomic(args.plot, png)
    if args.json == "-":
        print_json(report)
        return 0
    if args.json is not None:
        import json

        write_atomic(Path(args.json), (json.dumps(to_jsonable(report), indent=2, allow_nan=False) + "\n").encode())
    print(f"RmsNormBackward on {args.soc} (all figures modelled by the twin's timeline; anchor = model of CANN "
          f"RmsNormGrad with perfect overlap)")
    print(format_table(rows, markdown=args.markdown))
    if args.twin_speed:
        t = report["twin_speed"]
        print(f"twin speed (wall clock, not modelled): {t['twin_seconds']:.3f} s for the kernel on 4096x4096 fp32, "
              f"NumPy float32 {t['numpy_seconds']:.3f} s, ratio {t['ratio']:.2f}")
    return 0
