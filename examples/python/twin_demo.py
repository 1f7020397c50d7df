# SPDX-License-Identifier: BSD-3-Clause
"""The original operator text's demo on the CPU twin: dy, x [32, 64, 128], rstd [32, 64, 1], gamma [128],
fp32, every element 2.0 (the same case as examples/aclnn/main.cpp on the NPU), then a random case.

    python examples/python/twin_demo.py

With every input 2.0: xhat = x * rstd = 4, g = dy * gamma = 4, mean(g * xhat) = 16, so
dx = rstd * (g - xhat * 16) = -120 everywhere and dgamma = 2048 rows * dy * xhat = 16384.
"""
import sys

import numpy as np

from rmsnorm_backward import compare
from rmsnorm_backward.golden import golden
from rmsnorm_backward.simulate import simulate


def run_case(title, dy, x, rstd, gamma) -> bool:
    dx, dgamma, stats = simulate(dy, x, rstd, gamma)
    want_dx, want_dgamma = golden(dy, x, rstd, gamma)
    reports = {"dx": compare(dx, want_dx, dx.dtype), "dgamma": compare(dgamma, want_dgamma, "fp32", round_golden=False)}
    print(f"{title}: dx[0, 0, :4] = {dx[0, 0, :4]}, dgamma[:4] = {dgamma[:4]}")
    print(f"  {stats['block_dim']} cores, tiling key {stats['tiling_key']}")
    for name, report in reports.items():
        print(f"  {name:7s} {report}")
    return all(r.passed for r in reports.values())


def main() -> int:
    shape = (32, 64, 128)
    twos = [np.full(s, 2.0, np.float32) for s in (shape, shape, (32, 64, 1), (128,))]
    ok = run_case("all inputs 2.0", *twos)

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    rstd = (1 / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6)).astype(np.float32)
    ok &= run_case("random", rng.standard_normal(shape).astype(np.float32), x, rstd,
                   rng.uniform(0.5, 1.5, 128).astype(np.float32))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
