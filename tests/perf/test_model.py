# SPDX-License-Identifier: BSD-3-Clause
"""The performance model's arithmetic: the anchor (CANN RmsNormGrad's algorithm, docs/design.md section 5)
checked against hand computation, and the reduction of per-core counters to a report."""
from __future__ import annotations

import pytest

from dataclasses import replace

from rmsnorm_backward.perf import anchor, measured, roofline_us
from rmsnorm_backward.perf.model import min_write_bytes, pool_cycles, restated_roofline_us


def test_the_model_reads_the_soc_table(model):
    assert model.cores == 48
    assert model.soc["hbm_gbps"] == 1550.0 and model.soc["clock_ghz"] == 1.85
    assert model.hbm_share(48) == pytest.approx(1550.0 / 1.85 / 48)
    assert model.cycles_to_us(1850.0) == pytest.approx(1.0)
    assert roofline_us(1_550_000, model) == pytest.approx(1.0)


def test_anchor_long_rows_read_dy_and_x_twice_the_second_time_from_l2(model):
    # 96 rows of 8192 fp16 cols on 48 cores: 2 rows per core; 8192 > 6080 cols, so two passes.
    got = anchor(96, 8192, "fp16", 0.25, model)
    row_in = 2 * 8192 * 2                       # dy and x of one row
    first = 2 * (row_in + 4) + 8192 * 2         # 2 rows + their rstd, gamma once per core
    again = 2 * row_in                          # the second pass, from L2 (48 x 32 KiB << 192 MiB)
    write = 2 * 8192 * 2 + 4 * 8192             # dx of 2 rows + the atomic fp32 dgamma add
    share = 1550.0 / 1.85 / 48                  # bytes per cycle per core
    mte2 = first / share + again / 110          # the writes land in L2 (a core's 4 MiB of it holds them)
    assert mte2 > first / share and mte2 > write / 64 and mte2 > 0.25 * 2 * 8192
    assert got.bottleneck == "MTE2"
    assert got.modelled_us == pytest.approx(mte2 / 1850 + model["launch_us"])
    assert got.l2_bytes == 96 * row_in
    assert got.hbm_bytes == 96 * (row_in + 4) + 48 * 8192 * 2 + 96 * 8192 * 2 + 48 * 4 * 8192
    assert got.link_bytes == got.hbm_bytes + got.l2_bytes


def test_anchor_short_rows_are_read_once_and_vector_time_can_bind(model):
    # 4800 rows of 4096 fp32 cols on 48 cores: 100 rows each, one pass; 4 vector cycles per element.
    got = anchor(4800, 4096, "fp32", 4.0, model)
    share = 1550.0 / 1.85 / 48
    per_core_bytes = 100 * (2 * 4096 * 4 + 4) + 4096 * 4 + 100 * 4096 * 4 + 4 * 4096
    v = 4.0 * 100 * 4096
    assert v > per_core_bytes / share
    assert got.bottleneck == "V"
    assert got.modelled_us == pytest.approx(v / 1850 + model["launch_us"])
    assert got.l2_bytes == 0


def test_anchor_uses_fewer_cores_for_few_rows_and_hbm_when_l2_is_too_small(model):
    # 3 rows: 3 cores, each with a larger HBM share, capped by the 32 B/cycle link for reads.
    small = anchor(3, 100, "fp16", 0.0, model)
    read, write = 100 * 2 * 2 + 4 + 100 * 2, 100 * 2 + 4 * 100
    assert small.modelled_us == pytest.approx(max(read / 32, write / 64, (read + write) / (1550 / 1.85 / 3)) / 1850
                                              + model["launch_us"])
    # 10^6 fp32 cols: 48 cores x 8 MB of dy and x between the two reads > 192 MiB: both from HBM.
    huge = anchor(48, 10**6, "fp32", 0.0, model)
    assert huge.l2_bytes == 0
    assert huge.hbm_bytes == 48 * (2 * 2 * 10**6 * 4 + 4) + 48 * 10**6 * 4 + 48 * 10**6 * 4 + 48 * 4 * 10**6


def core(cycles, **busy):
    base = {"model_cycles": cycles, "hbm_bytes": 100, "l2_bytes": 10, "gm_read_bytes": 80, "gm_write_bytes": 30,
            "active_lanes": 48, "lane_slots": 64, "busy_hbm_cycles": 0, "busy_mte2_cycles": 0,
            "busy_mte3_cycles": 0, "busy_v_cycles": 0, "busy_s_cycles": 0}
    base.update(busy)
    return base


def test_measured_names_the_busiest_cores_bottleneck(model):
    cores = [core(1850, busy_hbm_cycles=1700, busy_v_cycles=900), core(900, busy_v_cycles=890)]
    got = measured(cores, model)
    assert got.modelled_us == pytest.approx(1.0 + model["launch_us"])
    assert got.bottleneck == "HBM"
    assert got.balance == pytest.approx(1375 / 1850)
    assert got.lane_utilisation == pytest.approx(0.75)
    assert (got.hbm_bytes, got.l2_bytes, got.link_bytes) == (200, 20, 220)
    assert got.v_cycles == 1790


def test_measured_says_dependencies_when_no_resource_is_busy_enough(model):
    got = measured([core(1000, busy_mte2_cycles=300, busy_v_cycles=500)], model)
    assert got.bottleneck == "dependencies"


def test_the_cores_together_stay_within_the_hbm_pool(model):
    # Two cores each ending at 1000 cycles but together reading 2 x 600 KB: the pool (838 B/cycle)
    # needs 1432 cycles, so the launch takes that, and says the pool binds.
    pool = 1550.0 / 1.85
    cores = [core(1000, hbm_bytes=600_000, gm_write_bytes=0), core(1000, hbm_bytes=600_000, gm_write_bytes=0)]
    got = measured(cores, model)
    assert pool_cycles(cores, model) == pytest.approx(1_200_000 / pool)
    assert got.modelled_us == pytest.approx(1_200_000 / pool / 1850 + model["launch_us"])
    assert got.bottleneck == "HBM pool"


def test_the_restated_bound_charges_only_the_writes_l2_cannot_hold(model):
    capacity = model.soc["l2_bytes"] * model["l2_capacity_fraction"]
    rate = model.hbm_bytes_per_us
    # dx fits L2: the bound is the reads alone; dx larger than L2: its excess counts too.
    assert restated_roofline_us(300_000_000, 100_000_000, model) == pytest.approx(200_000_000 / rate)
    big = int(capacity) + 50_000_000
    assert restated_roofline_us(2 * big + big, big, model) == pytest.approx((2 * big + 50_000_000) / rate)
    assert min_write_bytes(4096, 4096, "bf16") == 4096 * 4096 * 2 + 4096 * 4
    half = replace(model, constants={**model.constants, "l2_capacity_fraction": 0.5})
    assert restated_roofline_us(3 * big, big, half) > restated_roofline_us(3 * big, big, model)
