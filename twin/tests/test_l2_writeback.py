# SPDX-License-Identifier: BSD-3-Clause
"""L2 as the timeline models it (timeline_memory.h): a write-back cache, least recently used out first.
A write lands in L2 while the line is there or L2 has room; a read allocates, pushing the least
recently used line out and writing it back to HBM when dirty; a write that would push a line out goes
to HBM; a read past L2 (CACHE_MODE_DISABLE) allocates nothing. L2 is held to 32 KiB here
(l2_capacity_fraction), so 16 KiB tiles show each step."""
from __future__ import annotations

import numpy as np
import pytest

from ascendc_twin import soc_info

TILE = 4096  # floats: 16 KiB, half the L2 of these tests
KIB32 = 32 * 1024

STEPS = f"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t TILE = {TILE};

extern "C" __global__ __aicore__ void steps(GM_ADDR x, GM_ADDR y)
{{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, TILE * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 3 * TILE);
    yg.SetGlobalBuffer((__gm__ float *)y, 3 * TILE);
    if (BYPASS) {{
        xg.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    }}
    Duplicate(t, 2.0f, TILE);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, t, TILE);             // y0 lands in L2, dirty: 16 of 32 KiB
    PipeBarrier<PIPE_ALL>();
    DataCopy(t, xg, TILE);             // x0 fills L2
    PipeBarrier<PIPE_ALL>();
    DataCopy(t, xg[TILE], TILE);       // x1 pushes y0 out: written back
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg[TILE], t, TILE);       // y1: L2 is full, so it goes to HBM
    PipeBarrier<PIPE_ALL>();
    DataCopy(t, xg[TILE], TILE);       // x1 again: from L2
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg[2 * TILE], t, TILE);   // y2: L2 full again, to HBM
}}
"""


@pytest.fixture(scope="module")
def fraction():
    return KIB32 / soc_info("Ascend910B2")["l2_bytes"]


def run_steps(run_source, rng, fraction, bypass):
    x = rng.standard_normal(3 * TILE, dtype=np.float32)
    y = np.zeros(3 * TILE, dtype=np.float32)
    core = run_source(STEPS, "steps", [x, y], defines={"BYPASS": int(bypass)},
                      model={"l2_capacity_fraction": fraction}).cores[0]
    np.testing.assert_array_equal(y, np.concatenate([np.full(TILE, 2.0, np.float32), x[TILE:2 * TILE], x[TILE:2 * TILE]]))
    return core


def test_a_dirty_line_pushed_out_is_written_back_and_a_write_to_a_full_l2_goes_to_hbm(run_source, rng, fraction):
    core = run_steps(run_source, rng, fraction, bypass=False)
    tile = TILE * 4
    assert core["writeback_bytes"] == tile                       # y0
    assert core["l2_bytes"] == tile                              # the second read of x1
    assert core["hbm_bytes"] == 2 * tile + tile + 2 * tile       # x0, x1; y0 written back; y1, y2 past L2


def test_reads_past_l2_leave_it_to_the_writes(run_source, rng, fraction):
    core = run_steps(run_source, rng, fraction, bypass=True)
    tile = TILE * 4
    # x allocates nothing, so y0 stays and y1 finds room; y2 would push y0 out and goes to HBM.
    assert core["writeback_bytes"] == 0
    assert core["l2_bytes"] == 0
    assert core["hbm_bytes"] == 3 * tile + tile                  # x0, x1, x1 again from HBM; y2


def test_written_back_bytes_take_hbm_time(run_source, rng, fraction):
    # One core's copies are held by its link, not by HBM: the charge shows in its HBM time only.
    kept = run_steps(run_source, rng, 1.0, bypass=False)      # the whole L2: every write stays
    held = run_steps(run_source, rng, fraction, bypass=False)
    assert kept["writeback_bytes"] == 0 and kept["hbm_bytes"] == 2 * TILE * 4
    assert held["busy_hbm_cycles"] == pytest.approx(kept["busy_hbm_cycles"] * 5 / 2, rel=0.01)
