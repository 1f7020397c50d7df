# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark plot: modelled time of ours, the anchor kernel (dgamma atomic and deterministic), the
anchor formula's lower bound and the roofline per case (matplotlib, an optional dependency)."""
from __future__ import annotations

import io


def render_png(rows: list[dict], title: str) -> bytes:
    """PNG bytes of a grouped bar chart (log scale, microseconds); ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["x".join(map(str, r["shape"])) + " " + r["dtype"] for r in rows]
    series = (("ours", "modelled_us"), ("anchor kernel, atomic", "anchor_kernel_us"),
              ("anchor kernel, deterministic", "anchor_kernel_deterministic_us"),
              ("anchor lower bound (formula)", "anchor_us"), ("roofline", "roofline_us"))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(rows) + 2), 4.8))
    for i, (name, key) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar([k + offset for k in range(len(rows))], [r[key] or 0.0 for r in rows], width, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("microseconds (modelled)")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=70, ha="right", fontsize=7)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=110)
    plt.close(fig)
    return out.getvalue()
