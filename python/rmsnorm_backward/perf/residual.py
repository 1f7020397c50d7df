# SPDX-License-Identifier: BSD-3-Clause
"""The fused add-RMSNorm backward (the kernel with dres) against the unfused pair it replaces: the
plain RmsNormBackward, then a separate elementwise add of the residual stream's gradient. Every
figure is modelled.

The fused launch and the plain backward are the real kernel on the twin and its timeline. The add
has no kernel here: it is modelled as its minimum bytes (two tensors read, one written) at full HBM
bandwidth plus one launch, which is a lower bound on any Add kernel's time, so the speed-up of the
fused form is understated, never inflated."""
from __future__ import annotations

import numpy as np

from ..op_def import dtype_of
from . import bench
from .bench import make_inputs
from ..twin import Model
from .model import measured, roofline_us
from .suites import Case


def add_us(case: Case, model: Model) -> float:
    """The separate add, ds + dx of case.shape in its dtype: its minimum bytes at full HBM bandwidth
    plus one launch (a lower bound)."""
    return 3 * case.rows * case.cols * dtype_of(case.dtype).itemsize / model.hbm_bytes_per_us + model["launch_us"]


def run_residual_case(case: Case, model: Model, rng: np.random.Generator) -> dict:
    """One shape x dtype: the fused launch (dres), the plain one, and the modelled add."""
    from rmsnorm_backward.simulate import simulate

    dy, x, rstd, gamma = make_inputs(case, rng)
    dres = np.ascontiguousarray(dy[::-1])  # any values of x's shape and dtype: they do not change what is counted
    soc = model.soc["name"]
    _, _, fused = simulate(dy, x, rstd, gamma, dres, soc=soc)
    _, _, plain = simulate(dy, x, rstd, gamma, soc=soc)
    ours, backward = measured(fused["cores"], model), measured(plain["cores"], model)
    add = add_us(case, model)
    floor = fused["min_bytes"]
    return {
        "shape": list(case.shape),
        "dtype": case.dtype,
        "path": fused["path"],
        "fused_us": ours.modelled_us,
        "backward_us": backward.modelled_us,
        "add_us": add,
        "unfused_us": backward.modelled_us + add,
        "speedup": (backward.modelled_us + add) / ours.modelled_us,
        "min_bytes": floor,
        "hbm_ratio": ours.hbm_bytes / floor,
        "link_ratio": ours.link_bytes / floor,
        "roofline_pct": 100.0 * roofline_us(floor, model) / ours.modelled_us,
    }


COLUMNS = (  # header, width, row -> text
    ("shape", 14, lambda r: "x".join(map(str, r["shape"]))),
    ("dtype", 5, lambda r: r["dtype"]),
    ("path", 18, lambda r: r["path"]),
    ("fused us", 9, lambda r: f"{r['fused_us']:.1f}"),
    ("bwd us", 9, lambda r: f"{r['backward_us']:.1f}"),
    ("add us", 8, lambda r: f"{r['add_us']:.1f}"),
    ("x unfused", 9, lambda r: f"{r['speedup']:.3f}"),
    ("HBM/min", 8, lambda r: f"{r['hbm_ratio']:.3f}"),
    ("link/min", 8, lambda r: f"{r['link_ratio']:.3f}"),
    ("%roof", 6, lambda r: f"{r['roofline_pct']:.1f}"),
)


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The residual rows as a fixed-width text table, or a Markdown one (all figures modelled)."""
    return bench.format_table(rows, markdown, COLUMNS)
