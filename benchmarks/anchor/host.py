"""Host side of the anchor kernel (CANN ops-nn RmsNormGrad's schedule as issue 17 describes it, written
here from that description): its tiling, and a launch on the CPU twin.

    dx, dgamma, launch = run_anchor(dy, x, rstd, gamma, deterministic=False, soc="Ascend910B2")

Paths: small-D for rows of at most SMALL_D_MAX_COLS columns filling whole 32-byte blocks, split-N up to
SPLIT_N_MAX_COLS columns, split-D above. The tiling lives here, beside the kernel, not in op_host.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmsnorm_backward.errors import InvalidInputError
from ascendc_twin import run_kernel, soc_info

KERNEL = Path(__file__).with_name("anchor_rms_norm_grad.cpp")
ENTRY = "anchor_rms_norm_grad"

SPLIT_N_MAX_COLS = 6080
SMALL_D_MAX_COLS = 640
CHUNK_COLS = 4096
GROUP_ROWS = 32
TASK_COLS = 64
BLOCK_BYTES = 32
PATHS = ("split_n", "small_d", "split_d")      # AnchorPath in anchor_common.h
DTYPES = ("float32", "float16", "bfloat16")    # the dtype index of the tiling key

# AnchorTiling (anchor_common.h), field by field: rows, cols, rowStride, blockDim, tileRows, chunkCols,
# groupRows, deterministic, wsStride, invCols, taskCols.
TILING_FORMAT = "<Q8IfI"


def small_d_tile_rows(cols: int) -> int:
    """Rows per small-D tile, the schedule's formula (UB bytes over per-row and per-column costs)."""
    return (195584 - 10 * cols) // (24 * cols + 268)


@dataclass(frozen=True)
class AnchorTiling:
    path: str
    tiling_key: int
    block_dim: int
    workspace_bytes: int
    data: bytes


def tiling(rows: int, cols: int, dtype: str, *, deterministic: bool, soc: str = "Ascend910B2") -> AnchorTiling:
    """The anchor's tiling for x of `rows` x `cols` elements of numpy dtype name `dtype`."""
    if dtype not in DTYPES:
        raise InvalidInputError(f"x must be one of {', '.join(DTYPES)} for the anchor kernel, got {dtype}")
    if rows < 1 or cols < 1:
        raise InvalidInputError(f"the anchor kernel needs at least one row and one column, got {rows} x {cols}")
    info = soc_info(soc)
    itemsize = np.dtype(np.float32).itemsize if dtype == "float32" else 2
    if cols > SPLIT_N_MAX_COLS:
        path, tile_rows = "split_d", 1
    elif cols <= SMALL_D_MAX_COLS and cols * itemsize % BLOCK_BYTES == 0:
        path, tile_rows = "small_d", small_d_tile_rows(cols)
    else:
        path, tile_rows = "split_n", 1
    block_dim = min(info["vector_cores"], rows)
    row_stride = -(-cols // 16) * 16
    ws_stride = -(-cols // TASK_COLS) * TASK_COLS
    data = struct.pack(TILING_FORMAT, rows, cols, row_stride, block_dim, tile_rows, CHUNK_COLS, GROUP_ROWS,
                       int(deterministic), ws_stride, 1.0 / cols, TASK_COLS)
    user = block_dim * ws_stride * 4 if deterministic else 0
    key = PATHS.index(path) * len(DTYPES) + DTYPES.index(dtype)
    return AnchorTiling(path, key, block_dim, info["sys_workspace_bytes"] + user, data)


def run_anchor(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray, *, deterministic: bool = False,
               soc: str = "Ascend910B2", seed=None):
    """Runs the anchor kernel on the twin: (dx, dgamma fp32, LaunchStats). seed orders the atomic adds."""
    cols = gamma.size
    rows = x.size // cols if cols else 0
    if dy.shape != x.shape or dy.dtype != x.dtype or gamma.dtype != x.dtype or rstd.size != rows:
        raise InvalidInputError("dy must match x in shape and dtype, gamma x's dtype, and rstd hold one value per row")
    plan = tiling(rows, cols, x.dtype.name, deterministic=deterministic, soc=soc)
    dx = np.empty_like(x)
    dgamma = np.empty(gamma.shape, dtype=np.float32)
    args = {"dy": np.ascontiguousarray(dy), "x": np.ascontiguousarray(x),
            "rstd": np.ascontiguousarray(rstd, dtype=np.float32), "gamma": np.ascontiguousarray(gamma),
            "dx": dx, "dgamma": dgamma, "workspace": np.zeros(plan.workspace_bytes, dtype=np.uint8),
            "tiling": np.frombuffer(plan.data, dtype=np.uint8).copy()}
    launch = run_kernel(KERNEL, ENTRY, args, block_dim=plan.block_dim, soc=soc, tiling_key=plan.tiling_key,
                        include_dirs=[KERNEL.parent], seed=seed)
    return dx, dgamma, launch
