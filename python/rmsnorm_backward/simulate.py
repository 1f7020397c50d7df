# SPDX-License-Identifier: BSD-3-Clause
"""RmsNormBackward on the CPU twin: the real kernel source (op_kernel/) with the real tiling.

    dx, dgamma, stats = simulate(dy, x, rstd, gamma, dres=None, gamma_offset=0.0, soc="Ascend910B2")

Inputs are NumPy arrays: dy, x and gamma float16, float32 or ml_dtypes.bfloat16 (one dtype), rstd
float32; gamma may be None (the scale is 1; dgamma comes back empty, shape (0,)); dres (the residual
stream's gradient of a fused add + RMSNorm, x's shape and dtype) is added to dx; gamma_offset is the
attribute (the scale is gamma + gamma_offset, in float32), checked once (attrs.check). The inputs are
checked by the C++ tiling (op_host/tiling, the code CANN's TilingFunc runs) on their shapes and
dtypes, with the host memory the run needs, before anything is copied (broadcast views are densified
only then): a bad input raises InvalidInputError with its sentence. dx has x's shape and dtype,
dgamma gamma's shape in float32. block_dim caps the cores (None: as many as the tiling's dgamma row
groups, at most the SoC's cores); the results are bitwise the same for every block_dim. The workspace
and the outputs start as poison (0xFF bytes), as uninitialised device memory would. stats holds the
launch: block_dim, tiling_key (the number the kernel branches on), path (its name), groups,
gm_read_bytes, gm_write_bytes, min_bytes (each input read once, each output written once),
traffic_ratio, per-core counters (cores) and their sums (total).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import attrs, host_memory, host_tiling, resources
from .errors import InvalidInputError
from .twin import run_kernel

KERNEL_NAME = "rms_norm_backward"
KERNEL_SOURCE = resources.path("op_kernel/rms_norm_backward.cpp")


def _numeric(name: str, value) -> np.ndarray:
    array = np.asarray(value)  # a view for arrays (broadcast ones too): nothing is copied yet
    if array.dtype.hasobject:
        raise InvalidInputError(f"{name} must be a numeric NumPy array (got dtype {array.dtype}).")
    return array


def _dense(array: np.ndarray) -> bool:
    return bool(array.flags.c_contiguous and array.flags.writeable)


POISON = 0xFF  # every byte of uninitialised device memory: NaN as float16, bfloat16 and float32


def _poisoned(shape, dtype) -> np.ndarray:
    array = np.empty(shape, dtype=dtype)
    array.view(np.uint8).fill(POISON)
    return array


def tiling_for(dy, x, rstd, gamma, dres=None, *, gamma_offset: float = attrs.GAMMA_OFFSET, soc: str = host_tiling.DEFAULT_SOC,
               block_dim: Optional[int] = None) -> dict:
    """The C++ tiling's verdict on these arrays' shapes and dtypes: its dict, or InvalidInputError."""
    arrays = {n: a for n, a in zip(host_tiling.NAMES, (dy, x, rstd, gamma, dres)) if a is not None}
    return host_tiling.tiling({n: a.shape for n, a in arrays.items()}, {n: a.dtype.name for n, a in arrays.items()},
                            gamma_offset=gamma_offset, soc=soc, block_dim=block_dim)


def simulate(dy, x, rstd, gamma, dres=None, *, gamma_offset: float = attrs.GAMMA_OFFSET, soc: str = host_tiling.DEFAULT_SOC,
             block_dim: Optional[int] = None):
    """Runs the kernel on the twin; returns (dx, dgamma, stats). See the module docstring."""
    checked = attrs.check({"gamma_offset": gamma_offset}, has_gamma=gamma is not None)
    return launch(dy, x, rstd, gamma, dres, soc=soc, block_dim=block_dim, **checked)


def launch(dy, x, rstd, gamma, dres=None, *, gamma_offset: float, soc: str = host_tiling.DEFAULT_SOC,
           block_dim: Optional[int] = None):
    """simulate() for a caller whose attributes are checked already (attrs.check, or a torch schema
    typing them; the tiling's rules still apply): the same results, without checking them again."""
    arrays = {n: _numeric(n, a) for n, a in zip(host_tiling.NAMES, (dy, x, rstd, gamma, dres)) if a is not None}
    tiling = tiling_for(*(arrays.get(n) for n in host_tiling.NAMES), gamma_offset=gamma_offset, soc=soc,
                        block_dim=block_dim)  # shapes only, before any copy
    host_memory.require_host_memory(
        host_memory.simulate_bytes({n: a.shape for n, a in arrays.items()},
                                 {n: a.dtype.itemsize for n, a in arrays.items()}, tiling,
                                 {n: _dense(a) for n, a in arrays.items()}),
        f"simulate on x {list(arrays['x'].shape)} {arrays['x'].dtype.name}")
    dense = {n: a if _dense(a) else np.array(a, order="C") for n, a in arrays.items()}
    dy, x, rstd, gamma, dres = (dense.get(n) for n in host_tiling.NAMES)
    fields = tiling["fields"]
    # Device memory is uninitialised (aclrtMalloc hands back whatever was there): the workspace and the
    # outputs start as poison, NaN in every float dtype, so a byte read before the kernel wrote it
    # reaches the results and fails the golden instead of passing as the zero a fresh array would hold.
    dx = _poisoned(x.shape, x.dtype)
    dgamma = _poisoned((0,) if gamma is None else gamma.shape, np.float32)  # no gamma: empty
    workspace = _poisoned((tiling["workspace_bytes"],), np.uint8)
    tiling_bytes = np.frombuffer(tiling["tiling"], dtype=np.uint8).copy()

    def gm(a: np.ndarray):  # rows = 0: nothing to read or write there, a null GM_ADDR as on the NPU
        return a if a.size else None

    args = {"dy": gm(dy), "x": gm(x), "rstd": gm(rstd), "gamma": gamma, "dres": None if dres is None else gm(dres),
            "dx": gm(dx), "dgamma": gm(dgamma),
            "workspace": workspace, "tiling": tiling_bytes}
    # auto_sync off: our kernel states every sync itself, so a missing one is a rule error (twin/RULES.md).
    launched = run_kernel(KERNEL_SOURCE, KERNEL_NAME, args, block_dim=tiling["block_dim"], soc=soc,
                        tiling_key=tiling["tiling_key"], include_dirs=[KERNEL_SOURCE.parent],
                        auto_sync=False)
    total = launched.total
    moved = total["gm_read_bytes"] + total["gm_write_bytes"]
    stats = {
        "block_dim": launched.block_dim,
        "tiling_key": tiling["tiling_key"],
        "path": tiling["path"],
        "groups": fields["groups"],
        "rows": fields["rows"],
        "cols": fields["cols"],
        "gm_read_bytes": total["gm_read_bytes"],
        "gm_write_bytes": total["gm_write_bytes"],
        "min_bytes": tiling["min_bytes"],
        "traffic_ratio": moved / tiling["min_bytes"] if tiling["min_bytes"] else 1.0,  # (no gamma, no rows: 0 / 0)
        "workspace_bytes": tiling["workspace_bytes"],
        "ub_bytes": tiling["ub_bytes"],
        "tiling": fields,
        "cores": launched.cores,
        "total": total,
    }
    return dx, dgamma, stats
