// SPDX-License-Identifier: BSD-3-Clause
// The SoC facts the tiling fixes instead of asking the running platform, for its reference platform:
// Atlas A2 (Ascend910B2; the A3's Ascend910_93 has the same). The tiling asks the platform for its
// cores and UB (platform_facts.h); what it decides the same way on every SoC, so that a shape gets
// the same tiling and the same bits of dx and dgamma everywhere, comes from here. The kernel's own
// granules (block and repeat bytes, event ids per event) are the kernel's constants in
// op_kernel/rms_norm_backward_ub_layout.h. The extension's build checks both against the CPU twin's
// platform table (op_host/tiling/python/platform_agreement.cpp).
#pragma once
#include <cstdint>

namespace rmsnorm_backward::tiling::reference_platform {

// The reference SoC (its SoC version string); op_def's [op] reference_soc names it for Python.
inline constexpr char kSocName[] = "Ascend910B2";

// The most vector cores of a supported SoC: dgamma's row groups never outnumber them.
inline constexpr uint32_t kVectorCores = 48;
// Unified Buffer per vector core, and the part of it this tiling keeps free (8 KiB + 256 B): more
// than the twin and the NPU require (the whole UB may hold TPipe buffers on A2), never less.
inline constexpr uint64_t kUbBytes = 192 * 1024;
inline constexpr uint64_t kUbReservedBytes = 8192 + 256;
// The platform file's per-core L2 rate (bytes per cycle), which the streamed tiler's cost model uses.
inline constexpr double kL2BytesPerCycle = 110;
// The platform file's per-core GM-to-UB rate (ddr_rate, bytes per cycle): how many cores' links it
// takes to fill HBM, which the long-rows tiler's group count uses.
inline constexpr double kGmToUbBytesPerCycle = 32;
// HBM bandwidth and clock of the streamed tiler's cost model: the tiling's own estimate, which ranks
// layouts that all work (speed, never correctness). The twin's timeline is calibrated to 1550 GB/s at
// 1.85 GHz, which would pick other chunks for 31 of 714 fp32 shapes above 16600 cols; the tiling
// keeps its estimate until an NPU profile says which chunks are faster.
inline constexpr double kTilingHbmGbps = 1600.0;
inline constexpr double kTilingClockGhz = 1.8;

}  // namespace rmsnorm_backward::tiling::reference_platform
