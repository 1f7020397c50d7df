// SPDX-License-Identifier: BSD-3-Clause
// The plain tiling's types: what it takes (TilingInput), what it gives (TilingResult) and the rule an
// input breaks (TilingError). A header of its own so that the tiling's parts (input_rules.h, the
// tilers) and its API (rms_norm_backward_tiling.h) include the types without including each other.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../../op_kernel/rms_norm_backward_tiling_data.h"
#include "platform_facts.h"

namespace rmsnorm_backward::tiling {

struct TilingInput {
    std::vector<int64_t> dy_shape, x_shape, rstd_shape, gamma_shape;
    std::string dy_dtype, x_dtype, rstd_dtype, gamma_dtype;  // NumPy names: float16, float32, bfloat16, ...
    bool has_gamma = true;                                    // false: gamma absent (scale 1, no dgamma); gamma_* unused
    bool has_dres = false;                                    // true: dres given (added to dx), dres_* describe it
    std::vector<int64_t> dres_shape;
    std::string dres_dtype;
    float gamma_offset = 0.0f;                                // op_def's attribute: the scale is gamma + gamma_offset
    PlatformFacts platform;                                   // the SoC it runs on (platform_facts.h)
    uint32_t block_dim_cap = 0;                               // 0: as many cores as useful
};

struct TilingResult {
    RmsNormBackwardTilingData data{};
    uint32_t block_dim = 0;
    uint32_t tiling_key = 0;
    uint64_t user_workspace_bytes = 0;
    uint64_t workspace_bytes = 0;  // the platform's system part + the user part
    uint64_t min_bytes = 0;        // GM traffic floor: each input read once, each output written once
    uint64_t ub_bytes = 0;         // the UB the launch holds at its peak (layout::LaunchUbBytes)
};

// What a broken rule is about: a tensor's shape (or size), a tensor's dtype, an attribute's value, or
// the platform the tiling runs on.
enum class TilingFault { kNone, kShape, kDtype, kAttr, kPlatform };

// One broken rule of the tiling, or none (ok()): its fault, the tensor or attribute it names (dy, x,
// rstd, gamma, dres, dx, dgamma, gamma_offset, block_dim, soc) and one sentence naming that and the rule.
struct TilingError {
    TilingFault fault = TilingFault::kNone;
    std::string tensor;
    std::string message;

    bool ok() const { return fault == TilingFault::kNone; }
};

// "shape", "dtype", "attr", "platform" ("" for kNone), for callers that report the fault by name.
const char *TilingFaultName(TilingFault fault);

}  // namespace rmsnorm_backward::tiling
