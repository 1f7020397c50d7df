# SPDX-License-Identifier: BSD-3-Clause
"""Runs benchmark cases: the real kernel on the twin (random inputs), its modelled figures beside
the roofline, the anchor kernel (a model of ops-nn RmsNormGrad's A2 schedule, benchmarks/anchor/, on the same twin
and timeline, dgamma atomic and deterministic) and the anchor formula, a lower bound on the anchor's time
(perfect overlap of its pipes). Every figure here is modelled (no NPU is involved)."""
from __future__ import annotations

import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .. import host_tiling
from ..op_def import dtype_of
from ..twin import Model
from .anchor import host
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


def report_header(model: Model) -> dict:
    """What every bench report (JSON) opens with: the SoC and its facts, that the figures are modelled,
    the source tree it ran from, the model constants and each one's source."""
    return {"soc": model.soc["name"], "modelled": True, **source_state(), "soc_facts": model.soc,
            "constants": model.constants, "sources": model.sources}


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


def anchor_kernel_columns(inputs, model: Model, ours_us: float, min_bytes: int) -> dict:
    """The anchor kernel's modelled figures in both dgamma modes, on the case's own inputs."""
    out = {}
    for mode, deterministic in (("anchor_kernel", False), ("anchor_kernel_deterministic", True)):
        _, _, launch = host.run_anchor(*inputs, deterministic=deterministic, soc=model.soc["name"], seed=0)
        theirs = measured(launch.cores, model)
        out[f"{mode}_us"] = theirs.modelled_us
        out[f"{mode}_speedup"] = theirs.modelled_us / ours_us
        out[f"{mode}_roofline_pct"] = 100.0 * roofline_us(min_bytes, model) / theirs.modelled_us
        out[mode] = asdict(theirs)
    rows = inputs[1].size // inputs[3].size
    out["anchor_kernel"]["path"] = host.tiling(rows, inputs[3].size, inputs[1].dtype.name, deterministic=False,
                                               soc=model.soc["name"]).path
    return out


def run_case(case: Case, model: Model, rng: np.random.Generator, anchor_kernel: bool = False) -> dict:
    """One shape x dtype through the kernel on the twin: a row of the benchmark table. anchor_kernel:
    also run the anchor kernel in both dgamma modes (its keys are None otherwise)."""
    from rmsnorm_backward.simulate import simulate

    inputs = make_inputs(case, rng)
    dy, x, rstd, gamma = inputs
    start = time.perf_counter()
    _, _, stats = simulate(dy, x, rstd, gamma, soc=model.soc["name"])
    twin_seconds = time.perf_counter() - start
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
    if anchor_kernel:
        kernel.update(anchor_kernel_columns(inputs, model, ours.modelled_us, floor))
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
    }


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
