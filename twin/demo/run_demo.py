"""The CPU-twin demo behind `./build.sh run` until the operator's CLI takes over: runs the Ascend C
demo kernel scaled_sum.cpp (not the operator) on 8 simulated AI cores and checks it against NumPy."""
import sys
from pathlib import Path

import numpy as np

from rmsnorm_backward.twin import run_kernel

TILES, TILE_LEN, BLOCK_DIM = 64, 2048, 8


def main() -> int:
    rng = np.random.default_rng()
    x = rng.standard_normal(TILES * TILE_LEN, dtype=np.float32)
    y = rng.standard_normal(TILES * TILE_LEN, dtype=np.float32)
    z = np.zeros_like(x)
    sums = np.zeros(TILES, np.float32)
    tiling = np.array([TILES, TILE_LEN], np.uint32)
    stats = run_kernel(Path(__file__).with_name("scaled_sum.cpp"), "scaled_sum",
                       {"x": x, "y": y, "z": z, "sums": sums, "tiling": tiling}, block_dim=BLOCK_DIM)
    want_z = (x * y + x) * np.float32(0.5)
    tiles64 = want_z.reshape(TILES, TILE_LEN).astype(np.float64)
    z_ok = np.array_equal(z, want_z)
    # fp32 summation error scales with the sum of magnitudes, not with the (possibly tiny) sum
    sums_err = float(np.max(np.abs(sums - tiles64.sum(axis=1)) / np.abs(tiles64).sum(axis=1)))
    print("CPU twin demo (the demo kernel twin/demo/scaled_sum.cpp, not the RmsNormBackward operator):")
    print(f"  {TILES} tiles x {TILE_LEN} fp32 on {BLOCK_DIM} cores: z = (x * y + x) * 0.5 and per-tile sums of z")
    print(f"  z bit-exact vs NumPy: {z_ok}; per-tile sums max error vs float64 (relative to the sum of |z|): {sums_err:.1e}")
    print(f"  GM read {stats.total['gm_read_bytes']} B, written {stats.total['gm_write_bytes']} B, "
          f"{stats.total['vector_instrs']} vector instructions")
    ok = z_ok and sums_err < 1e-5
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
