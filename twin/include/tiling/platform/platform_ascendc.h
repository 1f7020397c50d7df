// SPDX-License-Identifier: BSD-3-Clause
// The twin's PlatformAscendC: the part of CANN's host-side platform query (the header of the same
// path in a CANN install) a TilingFunc uses, answered from the twin's hardware table
// (twin/platform.h). A tiling function asks this class and CANN's the same questions,
// so here it reads the twin's facts as on an NPU it reads CANN's.
#pragma once
#include <cstdint>
#include <cstring>

#include "twin/platform.h"

namespace fe {

// CANN passes the platform description of the running device; the twin's is its table row.
class PlatFormInfos {
public:
    explicit PlatFormInfos(const twin::SocInfo &soc) : soc_(soc) {}
    const twin::SocInfo &Soc() const { return soc_; }

private:
    const twin::SocInfo &soc_;
};

}  // namespace fe

namespace platform_ascendc {

// The memories GetCoreMemSize reports; the twin knows the Unified Buffer and L2.
enum class CoreMemType { UB, L2 };

// The SoC families the twin emulates (CANN names more).
enum class SocVersion { ASCEND910B, ASCEND910_93 };

class PlatformAscendC {
public:
    PlatformAscendC() = delete;
    explicit PlatformAscendC(fe::PlatFormInfos *platformInfo) : info_(platformInfo) {}

    uint32_t GetCoreNumAiv() const { return info_->Soc().vector_cores; }
    uint32_t GetLibApiWorkSpaceSize() const { return uint32_t(info_->Soc().sys_workspace_bytes); }
    void GetCoreMemSize(const CoreMemType &memType, uint64_t &size) const
    {
        size = memType == CoreMemType::UB ? info_->Soc().ub_bytes : info_->Soc().l2_bytes;
    }
    SocVersion GetSocVersion() const
    {
        return std::strcmp(info_->Soc().short_name, "ascend910_93") == 0 ? SocVersion::ASCEND910_93
                                                                         : SocVersion::ASCEND910B;
    }

private:
    fe::PlatFormInfos *info_;
};

}  // namespace platform_ascendc
