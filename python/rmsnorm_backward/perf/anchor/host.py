# SPDX-License-Identifier: BSD-3-Clause
"""Host side of the anchor kernel (a model of ops-nn's A2 RmsNormGrad schedule; benchmarks/anchor/ holds
the kernel and ANCHOR.md, the table of what it follows): its tiling, and a launch on the CPU twin.

    dx, dgamma, launch = run_anchor(dy, x, rstd, gamma, deterministic=False, soc="Ascend910B2")

Paths: split-N up to SPLIT_N_MAX_COLS columns (small-D tiles of whole rows at colAlign <= SMALL_D_MAX_COLS),
split-D above. The tiling lives here, beside the kernel, not in op_host.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from rmsnorm_backward import host_tiling, resources
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.twin import run_kernel, soc_info

ENTRY = "anchor_rms_norm_grad"

SPLIT_N_MAX_COLS = 6080          # split-N's row buffer, fp32 elements
SPLIT_D_CHUNK_COLS = 4096        # split-D's chunk, fp32 elements
SMALL_D_MAX_COLS = 640           # small-D: colAlign at most this
SMALL_D_UB_BYTES = 195584        # the small-D formula's UB: 191 KB
SMALL_D_WEIGHTS = (10, 24, 268)  # its bytes per column, per row x column, per row
WORKSPACE_SHARE = 0.05           # deterministic chunking: workspace over 5 % of the inputs ...
WORKSPACE_INPUTS = 500 << 20     # ... of at least 500 MB (not modelled: refused)
PATHS = ("split_n", "split_d")                 # AnchorPath in anchor_common.h
DTYPES = ("float32", "float16", "bfloat16")    # the dtype index of the tiling key

# AnchorTiling (anchor_common.h), field by field: rows, cols, colAlign, blockDim, blockFactor, coreTail,
# ubFactor, deterministic, rstdLen, avgFactor.
TILING_FORMAT = "<Q8If4x"  # 4x: the struct pads to its 8-byte alignment


@lru_cache(maxsize=None)
def kernel() -> Path:
    """The anchor kernel's entry source (package data in a wheel, benchmarks/anchor/ in a checkout)."""
    return resources.path("benchmarks/anchor/anchor_rms_norm_grad.cpp")


def small_d_rows(col_align: int) -> int:
    """Rows per small-D loop: the UB over its per-column and per-row costs."""
    per_col, per_cell, per_row = SMALL_D_WEIGHTS
    return (SMALL_D_UB_BYTES - col_align * per_col) // (col_align * per_cell + per_row)


def _block(nbytes: int) -> int:
    return -(-nbytes // 32) * 32


def split_n_ub_bytes(ub_factor: int, col_align: int, block_dim: int, align: int) -> int:
    """UB bytes of split-N's buffers (anchor_split_n.h): dy, x, dx two fp32 tiles each, rstd two, gamma and
    dgamma one fp32 row each (rstd's floats rounded up to `align`, the column alignment); small-D also a
    64-float row-sum block and a float per row."""
    tile = max(ub_factor * col_align, block_dim * 64) * 4
    rstd = _block(-(-ub_factor // align) * align * 4)
    small = _block(ub_factor * 64 * 4) + _block(ub_factor * 4) if col_align <= SMALL_D_MAX_COLS else 0
    return 6 * tile + 2 * rstd + 2 * _block(col_align * 4) + small


@dataclass(frozen=True)
class AnchorTiling:
    path: str
    tiling_key: int
    block_dim: int
    block_factor: int
    ub_factor: int
    workspace_bytes: int
    data: bytes


def tiling(rows: int, cols: int, dtype: str, *, deterministic: bool, soc: str = host_tiling.DEFAULT_SOC) -> AnchorTiling:
    """The anchor's tiling for x of `rows` x `cols` elements of numpy dtype name `dtype`."""
    if dtype not in DTYPES:
        raise InvalidInputError(f"x must be one of {', '.join(DTYPES)} for the anchor kernel, got {dtype}")
    if rows < 1 or cols < 1:
        raise InvalidInputError(f"the anchor kernel needs at least one row and one column, got {rows} x {cols}")
    info = soc_info(soc)
    itemsize = np.dtype(dtype).itemsize if dtype != "bfloat16" else 2
    align = 8 if itemsize == 4 else 16
    col_align = -(-cols // align) * align
    block_factor = -(-rows // info["vector_cores"])
    block_dim = -(-rows // block_factor)
    core_tail = rows - (block_dim - 1) * block_factor if rows % block_factor else 0
    if cols <= SPLIT_N_MAX_COLS:
        path = "split_n"
        buffer = small_d_rows(col_align) * col_align if col_align <= SMALL_D_MAX_COLS else SPLIT_N_MAX_COLS
        ub_factor = min(buffer // col_align, block_factor)
        while ub_factor > 1 and split_n_ub_bytes(ub_factor, col_align, block_dim, align) > info["ub_usable_bytes"]:
            ub_factor -= 1
        if split_n_ub_bytes(ub_factor, col_align, block_dim, align) > info["ub_usable_bytes"]:
            raise InvalidInputError(f"{cols} columns need more than the twin's usable UB of "
                                    f"{info['ub_usable_bytes']} bytes on the anchor's split-N path")
    else:
        path, ub_factor = "split_d", SPLIT_D_CHUNK_COLS
    inputs = rows * cols * itemsize * 2 + rows * 4 + cols * itemsize
    if deterministic and path == "split_d" and block_dim * col_align * 4 > inputs * WORKSPACE_SHARE \
            and inputs >= WORKSPACE_INPUTS:
        raise InvalidInputError(f"{rows} x {cols} needs the deterministic chunked workspace, "
                                "which the anchor kernel does not model")
    rstd_len = -(-ub_factor // align) * align
    data = struct.pack(TILING_FORMAT, rows, cols, col_align, block_dim, block_factor, core_tail, ub_factor,
                       int(deterministic), rstd_len, 1.0 / cols)
    user = (col_align + 8) * block_dim * 4 if deterministic else 8 * block_dim * 4
    key = PATHS.index(path) * len(DTYPES) + DTYPES.index(dtype)
    return AnchorTiling(path, key, block_dim, block_factor, ub_factor, info["sys_workspace_bytes"] + user, data)


def run_anchor(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray, *, deterministic: bool = False,
               soc: str = host_tiling.DEFAULT_SOC, seed=None):
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
    source = kernel()
    launch = run_kernel(source, ENTRY, args, block_dim=plan.block_dim, soc=soc, tiling_key=plan.tiling_key,
                        include_dirs=[source.parent], seed=seed)
    return dx, dgamma, launch
