// SPDX-License-Identifier: BSD-3-Clause
// The hardware table of the platform the twin emulates: UB size and core count for the twin's
// cores, clock and bandwidths for the performance model (Python reads them through the extension).
// The operator's tiling does not read this table: it asks the platform, through the twin's
// PlatformAscendC (tiling/platform/platform_ascendc.h) here and CANN's on a real install.
// Sources: CANN platform configuration files and the Ascend C API documentation; the performance
// figures' sources are named field by field below.
#pragma once
#include <cstdint>
#include <cstring>

namespace twin {

// Sources of the performance figures: ADD = asc-devkit's add_high_performance sample README (an
// 8192 x 8192 half Add on 48 cores of an Atlas A2 training product, profiled per case); the
// platform file = the [AICoreMemoryRates] of CANN's Ascend910B2.ini (as shipped with ge's tests).
struct SocInfo {
    const char *name;            // the SoC version string CANN reports, e.g. "Ascend910B2"
    const char *short_name;      // the SoC family, the op_def / AddConfig name, e.g. "ascend910b"
    uint32_t vector_cores;       // AI vector cores: the block dim ceiling
    uint32_t ub_bytes;           // Unified Buffer per vector core
    // UB a kernel's TPipe may not carve: none on A2. asc-devkit's CPU-debug TPipe lets buffers fill the
    // whole 192 KiB (kernel_utils_mode_cpu.h, dav-2201), and nothing on the NPU checks; the 256 B
    // platform_ascendc's GetCoreMemSize(UB) keeps back on 910B (the KFC message slot) and the 8 KiB
    // of ReserveLocalMemory (the SIMT data cache of later chips) are for a tiling to keep, and
    // production tilings (ops-nn's rms_norm_grad small-D: 195,584 B) plan past 188,160.
    uint32_t ub_reserved_bytes;
    uint64_t l2_bytes;           // L2 cache shared by all cores
    uint64_t sys_workspace_bytes;  // system part of the workspace, before the user part
    double clock_ghz;            // ADD: "clock frequency 1.85GHz" on Atlas A2 (taken for A3 too)
    // HBM bandwidth in GB/s. Measured: ADD cases 2 and 3 fit 17.4 B/cycle per core of 48 at 1.85 GHz
    // for first reads (1.55 TB/s), case 5 read 1.53 TB/s beside its writes; 910B3 and A3: assumed the same.
    double hbm_gbps;
    double ddr_bytes_per_cycle;  // platform file ddr_rate (units undocumented; the model: bytes/cycle)
    double l2_bytes_per_cycle;   // platform file l2_rate (same units)
    // Platform file ub_to_ddr_rate. ADD case 3's 57.4 us of MTE3 for 171 32 KB writes per core (about
    // 28 B/cycle if read as a rate) is 620 cycles each: copy_issue_cycles plus 32 KB at 64 B/cycle.
    double ub_to_ddr_bytes_per_cycle;

    uint32_t UbUsableBytes() const { return ub_bytes - ub_reserved_bytes; }
};

// Each fact of a row with its name, in declaration order: the extension's Python dict of the table
// is built from this, so the names are written here, once, beside the fields.
template <class Visit>
void VisitFacts(const SocInfo &s, Visit &&visit)
{
    visit("name", s.name);
    visit("short_name", s.short_name);
    visit("vector_cores", s.vector_cores);
    visit("ub_bytes", s.ub_bytes);
    visit("ub_reserved_bytes", s.ub_reserved_bytes);
    visit("ub_usable_bytes", s.UbUsableBytes());
    visit("l2_bytes", s.l2_bytes);
    visit("sys_workspace_bytes", s.sys_workspace_bytes);
    visit("clock_ghz", s.clock_ghz);
    visit("hbm_gbps", s.hbm_gbps);
    visit("ddr_bytes_per_cycle", s.ddr_bytes_per_cycle);
    visit("l2_bytes_per_cycle", s.l2_bytes_per_cycle);
    visit("ub_to_ddr_bytes_per_cycle", s.ub_to_ddr_bytes_per_cycle);
}

inline constexpr uint32_t kUbBlockBytes = 32;    // UB address / DataCopy granule
inline constexpr uint32_t kRepeatBytes = 256;    // one vector repeat: 8 blocks
inline constexpr uint32_t kMaxRepeat = 255;      // repeats per instruction
// Event ids per hardware event (e.g. MTE2_V) of one TPipe on dav-c220 (QUE_MAX_EVENT): every EnQue
// holds one until its DeQue, every FreeTensor one until its buffer's next AllocTensor, AllocEventID
// one until ReleaseEventID. So at most this many buffers of one queue position may be in flight.
inline constexpr uint32_t kEventIdsPerEvent = 8;

inline constexpr SocInfo kSocTable[] = {
    {"Ascend910B2", "ascend910b", 48, 196608, 0, 192ull << 20, 16ull << 20, 1.85, 1550.0, 32, 110, 64},
    {"Ascend910B3", "ascend910b", 40, 196608, 0, 192ull << 20, 16ull << 20, 1.85, 1550.0, 32, 110, 64},
    {"Ascend910_93", "ascend910_93", 48, 196608, 0, 192ull << 20, 16ull << 20, 1.85, 1550.0, 32, 110, 64},
};

// nullptr when the SoC is not in the table.
inline const SocInfo *FindSoc(const char *name)
{
    for (const SocInfo &soc : kSocTable) {
        if (std::strcmp(soc.name, name) == 0) {
            return &soc;
        }
    }
    return nullptr;
}

}  // namespace twin
