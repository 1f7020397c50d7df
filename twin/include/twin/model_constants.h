// SPDX-License-Identifier: BSD-3-Clause
// The performance model's own constants, per SoC, each with its source: the table the timeline
// (timeline.h) prices instructions with, and Python reads through the extension (load_model;
// model_constants varies them for a sensitivity study). SoC facts are not here: they come from platform.h.
#pragma once
#include <cstddef>
#include <cstring>
#include <iterator>

namespace twin {

// Model-only constants per SoC; where each comes from is in kModelFields (the Python performance
// package reads both through the extension: one source). Each source begins with its kind:
// "measured" (a public measurement on the hardware, cited), "guide" (a rule or figure of CANN's
// programming guide), "range" (a published range; the point taken in it is ours) or "assumption"
// (nobody measured it). `bench --sensitivity` varies the range and assumption kinds.
struct ModelConstants {
    const char *soc;
    double vector_cycles_per_repeat;
    double vector_issue_cycles;
    double reduce_issue_factor;
    double cast_repeat_factor;
    double copy_issue_cycles;
    double gm_burst_bytes;
    double scalar_issue_cycles;
    double scalar_gm_cycles;
    double sync_all_cycles;
    double launch_us;
    double l2_capacity_fraction;
    double hbm_phase_overlap;
    double pipe_barrier_cycles;
    double flag_sync_cycles;
};

inline constexpr ModelConstants kModelTable[] = {
    {"Ascend910B2", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 8.0, 16.0},
    {"Ascend910B3", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 8.0, 16.0},
    {"Ascend910_93", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 8.0, 16.0},
};

struct ModelField {
    const char *name;
    double ModelConstants::*member;
    const char *source;
};
// ADD = asc-devkit examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance
// (README: an 8192 x 8192 half Add on 48 cores of an Atlas A2 at 1.85 GHz, profiled per case).
inline constexpr ModelField kModelFields[] = {
    {"vector_cycles_per_repeat", &ModelConstants::vector_cycles_per_repeat,
     "measured: ADD case 6, 86 Adds of 127 repeats per core in 6.954 us = 149.6 cycles each, i.e. one repeat "
     "per cycle plus the issue cost below (the README's 128 halves per cycle)"},
    {"vector_issue_cycles", &ModelConstants::vector_issue_cycles,
     "measured: ADD case 6, 149.6 cycles per 127-repeat Add less its 127 repeats (no bank conflicts there)"},
    {"reduce_issue_factor", &ModelConstants::reduce_issue_factor,
     "range: the guide's 'select low-latency instructions' page puts reduction instructions at 2-5x the latency "
     "of an Add; the issue cost of a reduction is this multiple of vector_issue_cycles (3.5: the middle)"},
    {"cast_repeat_factor", &ModelConstants::cast_repeat_factor,
     "assumption: a Cast repeat costs this many element-wise repeats (no public per-instruction figure found)"},
    {"copy_issue_cycles", &ModelConstants::copy_issue_cycles,
     "measured: ADD cases 2 and 3 (serial 8 KB and 32 KB GM->UB copies, 583.7 and 1994.6 cycles each) fit "
     "113 cycles per copy plus 17.4 bytes per cycle; with it a copy reaches 90 % of its rate at 16 KB, as the "
     "guide's 'move large blocks at once' page says"},
    {"gm_burst_bytes", &ModelConstants::gm_burst_bytes,
     "guide: the 2201 hardware constraints split GM transfers into 128/256/512-byte bursts rounded up when "
     "unaligned, and the '512B-aligned GM addresses' page measures 32-byte-aligned copies at down to 70 % of "
     "512-byte-aligned ones; the link moves each block's span rounded out to this many bytes"},
    {"scalar_issue_cycles", &ModelConstants::scalar_issue_cycles,
     "assumption: scalar-unit cycles to issue one instruction (address and parameter set-up)"},
    {"scalar_gm_cycles", &ModelConstants::scalar_gm_cycles,
     "assumption: round trip of one GlobalTensor::GetValue/SetValue, cycles"},
    {"sync_all_cycles", &ModelConstants::sync_all_cycles,
     "assumption: hardware SyncAll release after the last core arrived, cycles"},
    {"launch_us", &ModelConstants::launch_us,
     "range: ADD cases 2-6, Task Duration less aiv_time = 9.44, 7.00, 6.46, 2.53, 6.03 us (scheduling and "
     "completion around the cores' work); 6.5 is their median, microseconds"},
    {"l2_capacity_fraction", &ModelConstants::l2_capacity_fraction,
     "assumption: the share of the SoC's L2 bytes the write-back cache of the model holds for one launch "
     "(timeline_memory.h: 512-byte lines, least recently used out first)"},
    {"hbm_phase_overlap", &ModelConstants::hbm_phase_overlap,
     "assumption, fitted to ADD: how independent the cores' phases are; a core draws the HBM pool over "
     "1 + (cores - 1) x (1 - o + o x d) cores, d its own share of time with HBM bytes in flight. 0 (cores in step) "
     "fits ADD cases 2, 3 and 5 with one pool of 1.55 TB/s; 1 would need 1.25 and 1.46 TB/s in cases 2 and 3 "
     "against 1.55 in case 5"},
    {"pipe_barrier_cycles", &ModelConstants::pipe_barrier_cycles,
     "assumption: a PipeBarrier on one pipe holds that pipe's next instruction this many cycles past its last "
     "one's end (the drain the barrier waits for; no public figure)"},
    {"flag_sync_cycles", &ModelConstants::flag_sync_cycles,
     "assumption: a cross-pipe handover (SetFlag -> WaitFlag, EnQue -> DeQue, FreeTensor -> AllocTensor) "
     "releases the waiting pipe this many cycles after the producer's work (no public figure)"},
};

inline const ModelConstants &FindModel(const char *soc)
{
    for (const ModelConstants &m : kModelTable) {
        if (std::strcmp(m.soc, soc) == 0) {
            return m;
        }
    }
    return kModelTable[0];  // every SoC of platform.h has a row (a test checks it)
}

// `base` with its fields replaced by `values`, in kModelFields order (bench --sensitivity).
inline ModelConstants WithValues(const ModelConstants &base, const double *values)
{
    ModelConstants m = base;
    for (size_t i = 0; i < std::size(kModelFields); ++i) {
        m.*kModelFields[i].member = values[i];
    }
    return m;
}

}  // namespace twin
