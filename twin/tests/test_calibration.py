# SPDX-License-Identifier: BSD-3-Clause
"""The performance model against Huawei's own measurements: asc-devkit's add_high_performance sample
(examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance, README "Atlas A2
Training Series Performance Comparison"), an Add of two 8192 x 8192 half tensors on 48 cores, profiled
per case as Task Duration. With the SoC table and model_constants.h as they stand (one set of
constants, the calibration being the only fit), the twin's modelled time of each case lies within
5 % of the measured one.

Two kernels run the cases: ADD_KERNEL below, written here to the README's description of each case
(the same split, copy lengths, buffer addresses, flags and L2 hints), which needs nothing fetched;
and, given ASC_DEVKIT_SRC, the sample's own kernel from add.asc, unchanged, which must also agree
with ADD_KERNEL to the cycle. The modelled time is the busiest core's makespan or the HBM pool's
floor (every byte HBM moved at the pool's full rate), whichever is longer, plus launch_us."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ascendc_twin import run_kernel
from ascendc_twin.model import load_model

SAMPLE = "examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance"
SIDE = 8192
CORES = 48
# Task Duration (us) per case, and the elements one copy moves (README table, Atlas A2).
MEASURED_US = {2: 306.58, 3: 268.5, 4: 264.02, 5: 187.68, 6: 184.52}
COPY_LEN = {2: 4096, 3: 16384, 4: 16384, 5: 16384, 6: 16256}
TOLERANCE = 0.05

# Case 2 and 3: one set of x, y, z tiles, load -> add -> store in turn. Case 4: two sets (ping, pong)
# at UB 0 / 32 / 64 KiB and 96 / 128 / 160 KiB, so the next load runs under the add and store.
# Case 5: as 4, with x and y read past L2. Case 6: as 5, with the tiles placed apart in UB banks.
ADD_KERNEL = """
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t SIDE = 8192, CORES = 48, FULL = 16384;

__aicore__ inline uint32_t Addr(uint32_t set, uint32_t which)
{
    if (CASE == 6) {  // x and y of one set side by side, z of both sets past 128 KiB
        return which == 2 ? FULL * 2 * 4 + set * COPY_LEN * 2 : set * FULL * 2 * 2 + which * COPY_LEN * 2;
    }
    return (set * 3 + which) * FULL * 2;
}

extern "C" __global__ __aicore__ void add_cases(GM_ADDR x, GM_ADDR y, GM_ADDR z)
{
    const uint32_t rows = SIDE / CORES, extra = SIDE % CORES, me = GetBlockIdx();
    const uint32_t mine = rows + (me < extra ? 1 : 0), first = me * rows + (me < extra ? me : extra);
    const uint64_t count = uint64_t(mine) * SIDE, base = uint64_t(first) * SIDE;
    GlobalTensor<half> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ half *)x + base, count);
    yg.SetGlobalBuffer((__gm__ half *)y + base, count);
    zg.SetGlobalBuffer((__gm__ half *)z + base, count);
    if (CASE >= 5) {
        xg.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
        yg.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    }
    const uint32_t sets = CASE >= 4 ? 2 : 1;
    LocalTensor<half> t[2][3];
    for (uint32_t s = 0; s < sets; ++s) {
        for (uint32_t w = 0; w < 3; ++w) {
            t[s][w] = LocalTensor<half>(TPosition::VECCALC, Addr(s, w), FULL);
        }
    }
    const uint32_t tiles = uint32_t((count + COPY_LEN - 1) / COPY_LEN);
    if (sets == 2) {
        SetFlag<HardEvent::V_MTE2>(0);
        SetFlag<HardEvent::V_MTE2>(1);
        SetFlag<HardEvent::MTE3_V>(0);
        SetFlag<HardEvent::MTE3_V>(1);
    }
    for (uint32_t i = 0; i < tiles; ++i) {
        const uint32_t s = sets == 2 ? i % 2 : 0, ev = s;
        const uint64_t at = uint64_t(i) * COPY_LEN;
        const uint32_t len = uint32_t(count - at < COPY_LEN ? count - at : COPY_LEN);
        const bool wait = sets == 2 || i > 0, signal = sets == 2 || i + 1 < tiles;
        if (wait) {
            WaitFlag<HardEvent::V_MTE2>(ev);
        }
        DataCopy(t[s][0], xg[at], len);
        DataCopy(t[s][1], yg[at], len);
        SetFlag<HardEvent::MTE2_V>(ev);
        WaitFlag<HardEvent::MTE2_V>(ev);
        if (wait) {
            WaitFlag<HardEvent::MTE3_V>(ev);
        }
        Add(t[s][2], t[s][0], t[s][1], len);
        if (signal) {
            SetFlag<HardEvent::V_MTE2>(ev);
        }
        SetFlag<HardEvent::V_MTE3>(ev);
        WaitFlag<HardEvent::V_MTE3>(ev);
        DataCopy(zg[at], t[s][2], len);
        if (signal) {
            SetFlag<HardEvent::MTE3_V>(ev);
        }
    }
    if (sets == 2) {
        WaitFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(1);
        WaitFlag<HardEvent::MTE3_V>(0);
        WaitFlag<HardEvent::MTE3_V>(1);
    }
    PipeBarrier<PIPE_ALL>();
}
"""


@pytest.fixture(scope="module")
def model():
    return load_model("Ascend910B2")


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(2201)
    x = rng.standard_normal(SIDE * SIDE, dtype=np.float32).astype(np.float16)
    y = rng.standard_normal(SIDE * SIDE, dtype=np.float32).astype(np.float16)
    return x, y, (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)


def modelled_us(stats, model) -> float:
    busiest = max(c["model_cycles"] for c in stats.cores)
    pool = stats.total["hbm_bytes"] / model.hbm_share(1)
    return model.cycles_to_us(max(busiest, pool)) + model["launch_us"]


def run_add(source, entry, case, inputs, **options):
    x, y, want = inputs
    z = np.empty_like(x)
    stats = run_kernel(source, entry, [x, y, z], block_dim=CORES, auto_sync=True, **options)
    np.testing.assert_array_equal(z, want)
    return stats


def run_ours(tmp_path, case, inputs):
    path = tmp_path / "add_cases.cpp"
    path.write_text(ADD_KERNEL)
    return run_add(path, "add_cases", case, inputs, defines={"CASE": case, "COPY_LEN": COPY_LEN[case]})


@pytest.mark.parametrize("case", [4, 5])
def test_the_model_reproduces_each_measured_add_case(tmp_path, inputs, model, case):
    stats = run_ours(tmp_path, case, inputs)
    assert modelled_us(stats, model) == pytest.approx(MEASURED_US[case], rel=TOLERANCE)
    writes = SIDE * SIDE * 2
    if case >= 5:  # reads past L2, so z fits in it: no written byte reaches HBM in the launch
        assert stats.total["hbm_bytes"] == 2 * writes and stats.total["writeback_bytes"] == 0
    else:  # reads fill L2: most of z is written back or goes past it
        assert stats.total["hbm_bytes"] > 2 * writes + writes // 2


@pytest.fixture(scope="module")
def sample_kernel(tmp_path_factory) -> Path:
    root = os.environ.get("ASC_DEVKIT_SRC")
    if not root:
        pytest.skip("ASC_DEVKIT_SRC is not set: point it at a checkout of the public asc-devkit repository")
    source = Path(root) / SAMPLE / "add.asc"
    if not source.is_file():
        pytest.skip(f"ASC_DEVKIT_SRC={root} has no {SAMPLE}/add.asc")
    text = source.read_text()
    kernel = text[:text.index("struct ArgInfo")]  # the kernel part; main() and its host helpers stay out
    kernel = kernel.replace('#include "data_utils.h"', "").replace('#include "acl/acl.h"', "")
    work = tmp_path_factory.mktemp("add_high_performance")
    (work / "sample_kernel.h").write_text(kernel)
    return work


@pytest.mark.parametrize("case", sorted(MEASURED_US))
def test_the_samples_own_kernel_reproduces_each_measured_case_and_ours_to_the_cycle(sample_kernel, tmp_path,
                                                                                     inputs, model, case):
    entry = tmp_path / "entry.cpp"
    entry.write_text(f'#include "sample_kernel.h"\nextern "C" __global__ __aicore__ void add_entry(GM_ADDR x, '
                     f'GM_ADDR y, GM_ADDR z)\n{{\n    add_custom<{SIDE}, {SIDE}, {CORES}, 1, {COPY_LEN[case]}>(x, y, z);\n}}\n')
    theirs = run_add(entry, "add_entry", case, inputs, include_dirs=[sample_kernel],
                     defines={"SCENARIO": case, "NPU_ARCH": 2201})
    assert modelled_us(theirs, model) == pytest.approx(MEASURED_US[case], rel=TOLERANCE)
    ours = run_ours(tmp_path, case, inputs)
    assert [c["model_cycles"] for c in ours.cores] == [c["model_cycles"] for c in theirs.cores]
    assert ours.total["hbm_bytes"] == theirs.total["hbm_bytes"]
