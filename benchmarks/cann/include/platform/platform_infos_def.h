// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's platform/platform_infos_def.h (not in the public sources): the platform
// description a TilingContext hands to a tiling function. CANN fills it from the SoC's platform
// ini file; this one answers from the project's SoC table (twin/include/twin/platform.h), and only
// the questions that table can answer: any other is refused and recorded (PlatformQueryErrors), so
// a tiling that asks for a fact the table lacks fails loudly instead of reading an invented value.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace twin {
struct SocInfo;
}

namespace fe {

// The memories a PlatFormInfos reports, in CANN's order (platform_ascendc casts CoreMemType to it).
enum class LocalMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

class PlatFormInfos {
public:
    PlatFormInfos() = default;
    explicit PlatFormInfos(const twin::SocInfo &soc) : soc_(&soc) {}

    uint32_t GetCoreNum() const;
    bool GetPlatformRes(const std::string &label, const std::string &key, std::string &val);
    bool GetPlatformResWithLock(const std::string &label, const std::string &key, std::string &val);
    void GetLocalMemSize(const LocalMemType &mem_type, uint64_t &size);
    void GetLocalMemBw(const LocalMemType &mem_type, uint64_t &bw_size);
    void SetCoreNumByCoreType(const std::string &core_type);

    // The questions this platform refused, one sentence each (empty when every one was answered).
    const std::vector<std::string> &Refused() const { return refused_; }

private:
    void Refuse(const std::string &what) const;
    const twin::SocInfo *soc_ = nullptr;
    std::string core_type_;
    mutable std::vector<std::string> refused_;
};

class OptionalInfos {};

}  // namespace fe
