// SPDX-License-Identifier: BSD-3-Clause
// The core type a kernel tests to split AIC from AIV work: g_coreType against AscendC::AIC / AIV /
// MIX, or the ASCEND_IS_* macros written as `if ASCEND_IS_AIV { ... }` (so each expands to a
// parenthesised condition). Every twin core is an AI vector core, so g_coreType is AIV; as in a
// split-core (dav-2201 vector) build it is a constant, and `if constexpr` on it compiles too.
#pragma once
#include <cstdint>

namespace AscendC {

constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

}  // namespace AscendC

constexpr int32_t g_coreType = AscendC::AIV;

#define ASCEND_IS_AIV (g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC (g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV (g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC (g_coreType != AscendC::AIC)
