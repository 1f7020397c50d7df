// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's platform/platform_info.h (not in the public sources). Its manager reads the
// platform ini files of an installed CANN for PlatformAscendCManager; there are none here, so it
// refuses (non-zero), and a tiling gets its platform only through its TilingContext.
#pragma once
#include <cstdint>
#include <string>

#include "platform/platform_infos_def.h"

namespace fe {

class PlatformInfoManager {
public:
    static PlatformInfoManager &Instance();
    uint32_t InitRuntimePlatformInfos(const std::string &soc_version);
    uint32_t GetRuntimePlatformInfosByDevice(uint32_t device_id, PlatFormInfos &infos);
};

}  // namespace fe
