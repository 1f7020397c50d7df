// SPDX-License-Identifier: BSD-3-Clause
// What the tiling needs to know about the platform it runs on, in one small struct. CANN's TilingFunc
// fills it from platform_ascendc::PlatformAscendC; the CPU twin from its own emulation of that class
// (twin/include/tiling/platform/platform_ascendc.h). Both go through PlatformFactsOf, so the tiling
// asks the two the same questions.
#pragma once
#include <cstdint>
#include <string>

namespace rmsnorm_backward::tiling {

struct PlatformFacts {
    std::string soc;                   // the SoC's name, for messages
    bool supported = false;            // Atlas A2 or A3 (SocVersion ASCEND910B or ASCEND910_93)
    uint32_t vector_cores = 0;         // GetCoreNumAiv(): the block dim ceiling
    uint64_t ub_bytes = 0;             // GetCoreMemSize(CoreMemType::UB): Unified Buffer per vector core
    uint64_t sys_workspace_bytes = 0;  // GetLibApiWorkSpaceSize(): the system part ahead of the user workspace
};

// `Platform` is CANN's platform_ascendc::PlatformAscendC or the twin's; `ub` its CoreMemType::UB.
template <class Platform, class MemType>
PlatformFacts PlatformFactsOf(const Platform &platform, MemType ub, const std::string &soc)
{
    using SocVersion = decltype(platform.GetSocVersion());
    PlatformFacts facts;
    facts.soc = soc;
    const SocVersion version = platform.GetSocVersion();
    facts.supported = version == SocVersion::ASCEND910B || version == SocVersion::ASCEND910_93;
    facts.vector_cores = platform.GetCoreNumAiv();
    platform.GetCoreMemSize(ub, facts.ub_bytes);
    facts.sys_workspace_bytes = platform.GetLibApiWorkSpaceSize();
    return facts;
}

}  // namespace rmsnorm_backward::tiling
