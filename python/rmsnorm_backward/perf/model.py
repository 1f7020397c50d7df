# SPDX-License-Identifier: BSD-3-Clause
"""From what the twin counted to modelled figures: roofline, our modelled time and where it goes,
and the anchor (CANN ops-nn RmsNormGrad's algorithm, docs/design.md section 5) under the same constants.

Our time comes from the twin's pipeline timeline of the real kernel (twin/include/twin/timeline.h);
nothing here derives our figures from the shape. Only the anchor is a formula: its byte counts per
shape and our measured vector cycles per element, with perfect overlap of its pipes (a generous
model of it: ours gets no such gift).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..op_def import dtype_of
from ..twin import Model

# The anchor's algorithm (docs/design.md section 5): rows up to this many cols stay in UB (dy and x
# read once); longer rows are processed in chunks and dy and x are read twice.
ANCHOR_RESIDENT_COLS = 6080

# Resources a core's time can go to, as named in the report, and the twin counters of their busy time.
RESOURCES = {"HBM": "busy_hbm_cycles", "MTE2": "busy_mte2_cycles", "MTE3": "busy_mte3_cycles",
             "V": "busy_v_cycles", "S": "busy_s_cycles"}
# Below this share of the makespan on every resource, the core mostly waits on dependencies.
BOUND_SHARE = 0.6


def roofline_us(min_bytes: int, model: Model) -> float:
    """The physical limit: the minimum bytes (the tiling's min_bytes: each input read once, each
    output written once) at full HBM bandwidth."""
    return min_bytes / model.hbm_bytes_per_us


def min_write_bytes(rows: int, cols: int, dtype: str) -> int:
    """The bytes a launch must write: dx, and dgamma (fp32, one per col)."""
    return rows * cols * dtype_of(dtype).itemsize + cols * 4


def restated_roofline_us(min_bytes: int, write_bytes: int, model: Model) -> float:
    """The fewest bytes HBM must move under the model, at the pool's full rate: every read once (from
    HBM: the launch starts with nothing of its inputs in L2) and only the writes L2 cannot hold (it
    holds l2_capacity_fraction of the SoC's L2; what stays dirty at the end costs the launch nothing,
    timeline_memory.h)."""
    capacity = model.soc["l2_bytes"] * model["l2_capacity_fraction"]
    return (min_bytes - write_bytes + max(0.0, write_bytes - capacity)) / model.hbm_bytes_per_us


@dataclass(frozen=True)
class Measured:
    modelled_us: float
    hbm_bytes: int
    l2_bytes: int
    link_bytes: int
    balance: float          # mean core makespan / busiest core's makespan
    lane_utilisation: float  # mask-enabled lanes / lanes the repeats could have used
    bottleneck: str          # busiest core's most used resource, or "dependencies"
    v_cycles: float          # vector-pipe cycles summed over the cores


def pool_cycles(cores: list[dict], model: Model) -> float:
    """The fewest cycles the launch's HBM traffic takes through the SoC-wide pool: the bytes HBM moved
    (read misses, bypassing writes, write-backs out of L2) at the full HBM rate. Each core judges its
    own draw (timeline.h); this floor keeps the cores together within the pool when their phases line
    up more than hbm_phase_overlap assumes."""
    return sum(c["hbm_bytes"] for c in cores) / model.hbm_share(1)


def measured(cores: list[dict], model: Model) -> Measured:
    """Modelled figures of one launch from its per-core twin counters: the busiest core's makespan, or
    the pool's floor (pool_cycles) when that is longer."""
    ends = [c["model_cycles"] for c in cores]
    busiest = cores[max(range(len(cores)), key=lambda i: ends[i])]
    floor = pool_cycles(cores, model)
    makespan = max(max(ends), floor)
    use = {name: busiest[key] for name, key in RESOURCES.items()}
    top = max(use, key=use.get)
    bottleneck = top if makespan and use[top] >= BOUND_SHARE * makespan else "dependencies"
    if floor > max(ends):
        bottleneck = "HBM pool"
    slots = sum(c["lane_slots"] for c in cores)
    return Measured(
        modelled_us=model.cycles_to_us(makespan) + model["launch_us"],
        hbm_bytes=sum(c["hbm_bytes"] for c in cores),
        l2_bytes=sum(c["l2_bytes"] for c in cores),
        link_bytes=sum(c["gm_read_bytes"] + c["gm_write_bytes"] for c in cores),
        balance=(sum(ends) / len(ends) / makespan) if makespan else 1.0,
        lane_utilisation=(sum(c["active_lanes"] for c in cores) / slots) if slots else 1.0,
        bottleneck=bottleneck,
        v_cycles=float(sum(c["busy_v_cycles"] for c in cores)),
    )


@dataclass(frozen=True)
class Anchor:
    modelled_us: float
    hbm_bytes: int
    l2_bytes: int
    link_bytes: int
    bottleneck: str


def anchor(rows: int, cols: int, dtype: str, v_cycles_per_element: float, model: Model) -> Anchor:
    """CANN ops-nn RmsNormGrad's algorithm modelled with perfect overlap of its pipes.

    Rows split evenly over the vector cores; dy and x read once up to ANCHOR_RESIDENT_COLS cols, twice
    above (the second read from L2 when the traffic between the two reads, every core streaming a
    row of dy and x, fits L2, else from HBM); gamma read once per core; dgamma added atomically into GM
    by every core (cols fp32 each). Writes cost HBM only beyond what L2 holds (at best every write
    lands there: the formula stays a lower bound).
    """
    e = dtype_of(dtype).itemsize
    used = max(1, min(rows, model.cores))
    two_pass = cols > ANCHOR_RESIDENT_COLS
    from_l2 = used * 2 * cols * e <= model.soc["l2_bytes"] * model["l2_capacity_fraction"]

    def traffic(nrows: int, ncores: int) -> tuple[int, int, int]:
        """(HBM reads, L2 reads, writes) of `nrows` rows handled by `ncores` cores."""
        first = nrows * (2 * cols * e + 4) + ncores * cols * e
        again = nrows * 2 * cols * e if two_pass else 0
        write = nrows * cols * e + ncores * 4 * cols
        return (first, again, write) if from_l2 else (first + again, 0, write)

    hbm_read, l2_read, write = traffic(math.ceil(rows / used) if rows else 0, 1)
    share = model.hbm_share(used)
    held = model.soc["l2_bytes"] * model["l2_capacity_fraction"] / used  # a core's part of L2
    cycles = {
        "HBM": (hbm_read + max(0.0, write - held)) / share,
        "MTE2": hbm_read / min(share, model.soc["ddr_bytes_per_cycle"]) + l2_read / model.soc["l2_bytes_per_cycle"],
        "MTE3": write / min(share, model.soc["ub_to_ddr_bytes_per_cycle"]),
        "V": v_cycles_per_element * math.ceil(rows / used) * cols,
    }
    top = max(cycles, key=cycles.get)
    hbm_read, l2_read, write = traffic(rows, used)
    return Anchor(
        modelled_us=model.cycles_to_us(cycles[top]) + model["launch_us"],
        hbm_bytes=hbm_read + write,
        l2_bytes=l2_read,
        link_bytes=hbm_read + l2_read + write,
        bottleneck=top,
    )
