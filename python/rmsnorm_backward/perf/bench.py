# SPDX-License-Identifier: BSD-3-Clause
"""Runs benchmark cases: the real kernel on the twin (random inputs), its modelled figures beside
the roofline, the anchor kernel (CANN's own RmsNormGrad: ops-nn's kernel and tiling, unchanged, on the
same twin and timeline, dgamma atomic and deterministic; perf.cann) and the anchor formula, a lower
bound on the anchor's time (perfect overlap of its pipes). Without the fetched CANN sources the anchor
kernel's columns are None and the report says why. Every figure here is modelled (no NPU is involved)."""
from __future__ import annotations

import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .. import host_tiling
from ..errors import KernelRuleError
from ..op_def import dtype_of
from ..twin import Model

from . import cann, crosscheck
from .model import anchor, measured, min_write_bytes, restated_roofline_us, roofline_us
from .suites import Case

# Values do not change what the twin counts; a random block of this many rows, repeated, keeps the
# inputs of the largest shapes cheap to make.
RANDOM_ROWS = 64


def source_state() -> dict:
    """The commit of the source tree the package runs from and whether its tracked files differ from it
    (None for both where that is no git checkout, e.g. an installed wheel): every bench report carries
    it, so a table says what it was measured at."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), *args], capture_output=True,
                              text=True, check=True, timeout=30).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def anchor_state() -> dict:
    """Which anchor kernel the report's anchor columns come from: CANN's RmsNormGrad from the ops-nn
    checkout it names (commit, version, hash of the op's files), or why there is none."""
    reason = cann.missing()
    if reason:
        return {"kernel": None, "missing": reason}
    return {"kernel": f"CANN ops-nn {cann.sources.OP_TYPE} ({cann.sources.KERNEL_SOURCE} and its tiling, unchanged)",
            "ops_nn": cann.ops_nn_identity()}


def report_header(model: Model) -> dict:
    """What every bench report (JSON) opens with: the SoC and its facts, that the figures are modelled,
    the source tree it ran from, the anchor kernel it compares with, the model constants and each one's
    source."""
    return {"soc": model.soc["name"], "modelled": True, **source_state(), "anchor": anchor_state(),
            "soc_facts": model.soc, "constants": model.constants, "sources": model.sources}


def make_inputs(case: Case, rng: np.random.Generator):
    """dy, x (case.shape), rstd (case.shape[:-1]) and gamma (cols) with random values."""
    dt = dtype_of(case.dtype).numpy()

    def tiled(scale: float) -> np.ndarray:
        block = (rng.standard_normal((min(case.rows, RANDOM_ROWS), case.cols), dtype=np.float32) * scale).astype(dt)
        reps = -(-case.rows // block.shape[0])
        return np.tile(block, (reps, 1))[: case.rows].reshape(case.shape)

    rstd = rng.uniform(0.5, 2.0, case.shape[:-1]).astype(np.float32)
    gamma = rng.standard_normal(case.cols, dtype=np.float32).astype(dt)
    return tiled(1.0), tiled(1.0), rstd, gamma


ANCHOR_MODES = (("anchor_kernel", False), ("anchor_kernel_deterministic", True))


# Elements of dx the bench compares with the golden per result (crosscheck: a sample of rows above it).
CHECKED_ELEMENTS = 1 << 21


def anchor_kernel_columns(inputs, model: Model, ours_us: float, min_bytes: int, reference, precision: dict | None) -> dict:
    """The anchor kernel's (CANN's RmsNormGrad) modelled figures in both dgamma modes, on the case's own
    inputs; with `precision` (a dict), each mode's check against `reference` is added to it. A twin rule
    CANN's kernel breaks fails the case (KernelRuleError naming it): nothing stands in for CANN's kernel."""
    out = {}
    for mode, deterministic in ANCHOR_MODES:
        try:
            dx, dgamma, stats = cann.run(*inputs, deterministic=deterministic, soc=model.soc["name"], seed=0)
        except KernelRuleError as e:
            # CANN's kernel runs unchanged on the twin, so a broken rule is a defect of the twin or of CANN's.
            shape = "x".join(map(str, inputs[1].shape))
            raise KernelRuleError(f"CANN's kernel broke a twin rule on {shape} {inputs[1].dtype.name} "
                                  f"({'deterministic' if deterministic else 'atomic'} dgamma): {e}") from e
        if precision is not None:
            precision[mode] = reference.check(dx, dgamma)
        del dx, dgamma
        theirs = measured(stats["cores"], model)
        out[f"{mode}_us"] = theirs.modelled_us
        out[f"{mode}_speedup"] = theirs.modelled_us / ours_us
        out[f"{mode}_roofline_pct"] = 100.0 * roofline_us(min_bytes, model) / theirs.modelled_us
        out[mode] = {**asdict(theirs), "path": stats["path"], "block_dim": stats["block_dim"]}
    return out


def run_case(case: Case, model: Model, rng: np.random.Generator, anchor_kernel: bool = False,
             precision: bool = False) -> dict:
    """One shape x dtype through the kernel on the twin: a row of the benchmark table. anchor_kernel:
    also run the anchor kernel in both dgamma modes where the CANN sources are (its keys are None
    otherwise). precision: also check ours and the anchor kernel against the float64 golden, dgamma in full
    and dx on at most CHECKED_ELEMENTS (the row's "precision": {"ours" | mode: crosscheck's result};
    None otherwise)."""
    from rmsnorm_backward.simulate import simulate

    inputs = make_inputs(case, rng)
    dy, x, rstd, gamma = inputs
    start = time.perf_counter()
    dx, dgamma, stats = simulate(dy, x, rstd, gamma, soc=model.soc["name"])
    twin_seconds = time.perf_counter() - start
    reference = crosscheck.Reference(*inputs, max_elements=CHECKED_ELEMENTS) if precision else None
    checks = {"ours": reference.check(dx, dgamma)} if precision else None
    del dx, dgamma
    ours = measured(stats["cores"], model)
    floor = stats["min_bytes"]
    roof = roofline_us(floor, model)
    bound = restated_roofline_us(floor, min_write_bytes(case.rows, case.cols, case.dtype), model)
    reads = sum(c["gm_read_bytes"] for c in stats["cores"])
    elements = case.rows * case.cols
    theirs = anchor(case.rows, case.cols, case.dtype, ours.v_cycles / max(elements, 1), model)
    kernel = dict.fromkeys(("anchor_kernel_us", "anchor_kernel_speedup", "anchor_kernel", "anchor_kernel_roofline_pct",
                            "anchor_kernel_deterministic_us", "anchor_kernel_deterministic_speedup",
                            "anchor_kernel_deterministic", "anchor_kernel_deterministic_roofline_pct"))
    if anchor_kernel and not cann.missing():
        kernel.update(anchor_kernel_columns(inputs, model, ours.modelled_us, floor, reference, checks))
    return {
        "shape": list(case.shape),
        "dtype": case.dtype,
        "rows": case.rows,
        "cols": case.cols,
        "path": stats["path"],
        "block_dim": stats["block_dim"],
        "modelled_us": ours.modelled_us,
        "roofline_us": roof,
        "min_bytes": floor,
        "hbm_bytes": ours.hbm_bytes,
        "l2_bytes": ours.l2_bytes,
        "link_bytes": ours.link_bytes,
        "hbm_ratio": ours.hbm_bytes / floor,
        "link_ratio": ours.link_bytes / floor,
        "roofline_pct": 100.0 * roof / ours.modelled_us,
        "kernel_roofline_pct": 100.0 * roof / max(ours.modelled_us - model["launch_us"], 1e-9),
        "restated_roofline_us": bound,
        "kernel_restated_pct": 100.0 * bound / max(ours.modelled_us - model["launch_us"], 1e-9),
        "past_l2_pct": 100.0 * sum(c["past_l2_bytes"] for c in stats["cores"]) / max(reads, 1),
        "overlap": model["hbm_phase_overlap"],
        "x_roofline": ours.modelled_us / roof,
        "core_balance": ours.balance,
        "lane_utilisation": ours.lane_utilisation,
        "bottleneck": ours.bottleneck,
        **kernel,
        "anchor": asdict(theirs),          # the formula: a lower bound on the anchor's time
        "anchor_us": theirs.modelled_us,
        "speedup": theirs.modelled_us / ours.modelled_us,
        "twin_seconds": twin_seconds,
        "precision": checks,
    }


PRECISION_NAMES = {"ours": "ours", "anchor_kernel": "CANN atomic", "anchor_kernel_deterministic": "CANN deterministic"}


def precision_misses(rows: list[dict]) -> dict[str, list[str]]:
    """Per backward (ours, CANN's in each dgamma mode): the cases whose dx or dgamma misses the golden,
    each as "case output" (rows without precision checks count for none)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        for who, result in (r.get("precision") or {}).items():
            out.setdefault(who, [])
            label = "x".join(map(str, r["shape"])) + " " + r["dtype"]
            out[who] += [f"{label} {name}" for name in ("dx", "dgamma") if not result[name]["passed"]]
    return out


def precision_lines(rows: list[dict]) -> list[str]:
    """One line per backward: how many cases pass the golden, and the misses."""
    checked = sum(1 for r in rows if r.get("precision"))
    return [f"{PRECISION_NAMES.get(who, who)}: {checked - len({m.rsplit(' ', 1)[0] for m in misses})} of {checked} "
            f"cases pass the float64 golden" + (f"; misses: {', '.join(misses)}" if misses else "")
            for who, misses in precision_misses(rows).items()]


def _figure(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


COLUMNS = (  # header, width, row -> text
    ("shape", 22, lambda r: "x".join(map(str, r["shape"]))),
    ("dtype", 5, lambda r: r["dtype"]),
    ("path", 18, lambda r: r["path"]),
    ("model us", 10, lambda r: f"{r['modelled_us']:.1f}"),
    ("HBM/min", 8, lambda r: f"{r['hbm_ratio']:.3f}"),
    ("link/min", 8, lambda r: f"{r['link_ratio']:.3f}"),
    ("%roof", 6, lambda r: f"{r['roofline_pct']:.1f}"),
    ("%roof-L", 7, lambda r: f"{r['kernel_roofline_pct']:.1f}"),
    ("%bound-L", 8, lambda r: f"{r['kernel_restated_pct']:.1f}"),
    ("past L2%", 8, lambda r: f"{r['past_l2_pct']:.0f}"),
    ("balance", 7, lambda r: f"{r['core_balance']:.2f}"),
    ("lanes", 5, lambda r: f"{r['lane_utilisation']:.2f}"),
    ("bound", 12, lambda r: r["bottleneck"]),
    ("anchor us", 10, lambda r: _figure(r["anchor_kernel_us"], ".1f")),
    ("det us", 10, lambda r: _figure(r["anchor_kernel_deterministic_us"], ".1f")),
    ("anchor %roof", 7, lambda r: _figure(r["anchor_kernel_roofline_pct"], ".1f")),
    ("bound us", 10, lambda r: f"{r['anchor_us']:.1f}"),
    ("x anchor", 8, lambda r: _figure(r["anchor_kernel_speedup"], ".3f")),
    ("x det", 8, lambda r: _figure(r["anchor_kernel_deterministic_speedup"], ".3f")),
    ("x bound", 8, lambda r: f"{r['speedup']:.3f}"),
)


def format_table(rows: list[dict], markdown: bool = False, columns=COLUMNS) -> str:
    """The benchmark rows as a fixed-width text table, or a Markdown one (all figures modelled), in
    `columns` (header, width, row -> text)."""
    if markdown:
        line = lambda cells: "| " + " | ".join(str(c) for c in cells) + " |"  # noqa: E731
        out = [line(h for h, _, _ in columns), line("---:" for _ in columns)]
    else:
        line = lambda cells: "  ".join(str(c).rjust(w) for c, (_, w, _) in zip(cells, columns))  # noqa: E731
        out = [line(h for h, _, _ in columns)]
    out += [line(f(r) for _, _, f in columns) for r in rows]
    return "\n".join(out)


def numpy_f32_backward(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray):
    """RmsNorm backward in NumPy float32 (the twin's speed reference, not a golden)."""
    r = rstd.reshape(-1, 1)
    xh = x * r
    g = dy * gamma
    mean = np.mean(g * xh, axis=1, keepdims=True, dtype=np.float32)
    return r * (g - xh * mean), np.sum(dy * xh, axis=0, dtype=np.float32)


def twin_speed(rows: int = 4096, cols: int = 4096, rng=None, soc: str = host_tiling.DEFAULT_SOC, runs: int = 3) -> dict:
    """Wall-clock seconds of the twin (the kernel through simulate) and of NumPy float32 on the same
    fp32 inputs, best of `runs` runs each (the first twin run also compiles, so it never counts)."""
    from rmsnorm_backward.simulate import simulate

    rng = rng or np.random.default_rng()
    dy, x, rstd, gamma = make_inputs(Case((rows, cols), "fp32"), rng)

    def best(fn) -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    simulate(dy, x, rstd, gamma, soc=soc)
    twin = best(lambda: simulate(dy, x, rstd, gamma, soc=soc))
    ref = best(lambda: numpy_f32_backward(dy, x, rstd, gamma))
    return {"shape": [rows, cols], "twin_seconds": twin, "numpy_seconds": ref, "ratio": twin / ref}
