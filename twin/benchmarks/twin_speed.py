# SPDX-License-Identifier: BSD-3-Clause
"""How fast the CPU twin runs a kernel, as a ratio to NumPy float32 doing the same math (goal <= 2x).

The kernel is the twin's demo kernel, demo/scaled_sum.cpp: per tile, copy x and y in, z = (x * y + x)
* 0.5, sum z, copy z and the sum out. NumPy does the same math on the whole arrays. The twin's time
is one run_kernel call (compiled beforehand) on arrays in the twin's GM memory (gm_array: like
device memory, no copies); the time with plain NumPy arrays (copied into guarded buffers and back)
is reported too. Best of --repeats runs, in wall time (the goal) and in CPU time of all threads (robust to load).
Not a test: it prints the numbers (or --json) and exits 0 whatever the ratio.

    python benchmarks/twin_speed.py [--elements N] [--tile-len N] [--block-dim N] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from tqdm import tqdm

from ascendc_twin import compile_kernel, gm_array, resources, run_kernel

KERNEL = resources.path("demo/scaled_sum.cpp")
GOAL = 2.0


def numpy_version(x, y, tile_len):
    z = x * y
    z += x
    z *= np.float32(0.5)
    return z, z.reshape(-1, tile_len).sum(axis=1, dtype=np.float32)


def best_of(fn, repeats, label):
    """Best wall and CPU seconds (all threads) of `repeats` runs: CPU time stays meaningful on a
    busy machine, where wall time mostly measures the other processes."""
    walls, cpus = [], []
    for _ in tqdm(range(repeats), desc=label, leave=False, file=sys.stderr):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=16 * 2**20, help="fp32 elements (default 16M)")
    parser.add_argument("--tile-len", type=int, default=4096, help="fp32 elements per tile, a multiple of 64")
    parser.add_argument("--block-dim", type=int, default=8, help="simulated AI cores")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side; the best counts")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    opts = parser.parse_args(argv)
    if opts.tile_len % 64 or opts.elements % opts.tile_len:
        parser.error("--tile-len must be a multiple of 64 that divides --elements")

    rng = np.random.default_rng()
    tiles = opts.elements // opts.tile_len
    host = {"x": rng.standard_normal(opts.elements, dtype=np.float32),
            "y": rng.standard_normal(opts.elements, dtype=np.float32),
            "z": np.zeros(opts.elements, np.float32), "sums": np.zeros(tiles, np.float32),
            "tiling": np.array([tiles, opts.tile_len], np.uint32)}
    resident = {k: gm_array(v) for k, v in host.items()}
    x, y, z, sums = (resident[k] for k in ("x", "y", "z", "sums"))

    compile_kernel(KERNEL, "scaled_sum")
    twin_s, twin_cpu = best_of(lambda: run_kernel(KERNEL, "scaled_sum", resident, block_dim=opts.block_dim),
                               opts.repeats, "twin")
    copied_s, _ = best_of(lambda: run_kernel(KERNEL, "scaled_sum", host, block_dim=opts.block_dim),
                          opts.repeats, "twin, copied arrays")
    numpy_s, numpy_cpu = best_of(lambda: numpy_version(x, y, opts.tile_len), opts.repeats, "numpy")
    want_z, want_sums = numpy_version(x, y, opts.tile_len)
    result = {
        "elements": opts.elements,
        "tile_len": opts.tile_len,
        "block_dim": opts.block_dim,
        "twin_seconds": twin_s,
        "numpy_seconds": numpy_s,
        "ratio": twin_s / numpy_s,
        "twin_copied_seconds": copied_s,
        "copied_ratio": copied_s / numpy_s,
        "twin_cpu_seconds": twin_cpu,
        "numpy_cpu_seconds": numpy_cpu,
        "cpu_ratio": twin_cpu / numpy_cpu,
        "goal_ratio": GOAL,
        "z_matches_numpy": bool(np.array_equal(z, want_z)),
        "sums_max_abs_error": float(np.max(np.abs(sums - want_sums))),
    }
    if opts.json:
        print(json.dumps(result))
    else:
        print(f"twin: {twin_s * 1e3:.1f} ms on {opts.block_dim} cores, NumPy float32: {numpy_s * 1e3:.1f} ms "
              f"for {opts.elements} elements in tiles of {opts.tile_len}")
        verdict = "within" if result["ratio"] <= GOAL else "above"
        print(f"ratio twin / NumPy = {result['ratio']:.2f} wall ({verdict} the goal of {GOAL:.0f}x), "
              f"{result['cpu_ratio']:.2f} in CPU time (twin {twin_cpu * 1e3:.1f} ms, NumPy {numpy_cpu * 1e3:.1f} ms)")
        print(f"with plain NumPy arrays (copied in and out): twin {copied_s * 1e3:.1f} ms, "
              f"ratio {result['copied_ratio']:.2f}")
        print(f"z matches NumPy: {result['z_matches_numpy']}, "
              f"sums max abs error vs NumPy {result['sums_max_abs_error']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
