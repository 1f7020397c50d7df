# SPDX-License-Identifier: BSD-3-Clause
"""The modelled cycles do not depend on how the OS runs the core threads: every core's cycles are the
same when the case runs alone, after another case, under CPU load, and in two processes at once
(timeline_launch.h's arbiter applies the cores' L2 accesses by modelled cycle, then core id). The kernel
makes the order matter: all cores read one shared table (the first core to reach a line pays HBM for
it), read their own rows through an L2 held to a few MiB (lines pushed out, dirty ones written back),
meet at SyncAll and read the rows again."""
from __future__ import annotations

import multiprocessing
import subprocess
import sys

import numpy as np
import pytest

from ascendc_twin import run_kernel

RUNS = 20
CORES = 48
TILE = 2048  # floats
TILES = 6
SHARED = 4 * TILE
L2_FRACTION = 4.0 / 192  # 4 MiB of the 192 MiB: the cores' rows do not fit

SHARED_READS = f"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t TILE = {TILE}, TILES = {TILES}, SHARED = {SHARED};

extern "C" __global__ __aicore__ void shared_reads(GM_ADDR table, GM_ADDR x, GM_ADDR y)
{{
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TQue<QuePosition::VECOUT, 1> qout;
    TBuf<TPosition::VECCALC> accb;
    pipe.InitBuffer(qin, 2, TILE * sizeof(float));
    pipe.InitBuffer(qout, 2, TILE * sizeof(float));
    pipe.InitBuffer(accb, TILE * sizeof(float));
    GlobalTensor<float> tg, xg, yg;
    tg.SetGlobalBuffer((__gm__ float *)table, SHARED);
    xg.SetGlobalBuffer((__gm__ float *)x + GetBlockIdx() * TILES * TILE, TILES * TILE);
    yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * TILES * TILE, TILES * TILE);
    LocalTensor<float> acc = accb.Get<float>();
    Duplicate(acc, 0.0f, TILE);
    for (uint32_t pass = 0; pass < 2; ++pass) {{
        for (uint32_t i = 0; i < TILES + SHARED / TILE; ++i) {{
            const bool own = i < TILES;
            LocalTensor<float> in = qin.AllocTensor<float>();
            DataCopy(in, own ? xg[i * TILE] : tg[(i - TILES) * TILE], TILE);
            qin.EnQue(in);
            LocalTensor<float> t = qin.DeQue<float>();
            Add(acc, acc, t, TILE);
            qin.FreeTensor(t);
            if (own) {{
                LocalTensor<float> out = qout.AllocTensor<float>();
                Adds(out, acc, 1.0f, TILE);
                qout.EnQue(out);
                LocalTensor<float> o = qout.DeQue<float>();
                DataCopy(yg[i * TILE], o, TILE);
                qout.FreeTensor(o);
            }}
        }}
        SyncAll();
    }}
}}
"""

OTHER = """
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void other(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 4096 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, 4096);
    yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * 4096, 4096);
    DataCopy(t, xg, 4096);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, t, 4096);
}
"""


def sources(tmp_dir):
    case, other = tmp_dir / "shared_reads.cpp", tmp_dir / "other.cpp"
    case.write_text(SHARED_READS)
    other.write_text(OTHER)
    return case, other


def run_case(path) -> list[int]:
    rng = np.random.default_rng(7)
    table = rng.standard_normal(SHARED, dtype=np.float32)
    x = rng.standard_normal(CORES * TILES * TILE, dtype=np.float32)
    y = np.zeros_like(x)
    stats = run_kernel(path, "shared_reads", [table, x, y], block_dim=CORES, seed=1,
                       model={"l2_capacity_fraction": L2_FRACTION})
    return [c["model_cycles"] for c in stats.cores] + [stats.total["hbm_bytes"], stats.total["writeback_bytes"]]


def run_other(path) -> None:
    x = np.ones(4096, dtype=np.float32)
    y = np.zeros(CORES * 4096, dtype=np.float32)
    run_kernel(path, "other", [x, y], block_dim=CORES)
    np.testing.assert_array_equal(y, 1.0)


def runs_in_a_process(path, runs: int) -> list[list[int]]:
    return [run_case(path) for _ in range(runs)]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return sources(tmp_path_factory.mktemp("deterministic"))


@pytest.fixture(scope="module")
def alone(kernels):
    return runs_in_a_process(kernels[0], RUNS)


def test_a_case_alone_gives_the_same_cycles_every_run(alone):
    assert alone[0][-1] > 0, "the case must push dirty lines out of L2 for the order to matter"
    assert all(run == alone[0] for run in alone)


def test_after_another_case_the_cycles_are_the_same(kernels, alone):
    for _ in range(RUNS):
        run_other(kernels[1])
        assert run_case(kernels[0]) == alone[0]


def test_under_cpu_load_the_cycles_are_the_same(kernels, alone):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        results = runs_in_a_process(kernels[0], RUNS)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert all(run == alone[0] for run in results)


def test_in_two_processes_at_once_the_cycles_are_the_same(kernels, alone):
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        both = pool.starmap(runs_in_a_process, [(kernels[0], RUNS // 2)] * 2)
    assert all(run == alone[0] for runs in both for run in runs)
