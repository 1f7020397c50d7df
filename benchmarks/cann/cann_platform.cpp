// SPDX-License-Identifier: BSD-3-Clause
// The platform CANN's host code asks (fe::PlatFormInfos, platform/platform_infos_def.h here), answered
// from the project's one SoC table (twin/platform.h). CANN reads these facts from the SoC's platform
// ini file; a question the table cannot answer is refused and recorded, never given a made-up value.
//
//   label     key                answer
//   version   SoC_version        the table's name (Ascend910B2, ...)
//   version   Short_SoC_version  its family as platform_ascendc's map spells it (Ascend910B, Ascend910_93)
//   version   NpuArch            2201: dav-c220, the vector core the twin emulates on every SoC it lists
//   SoCInfo   core_type_list     CubeCore,VectorCore: A2/A3 cores are split, so AIV counts are asked apart
//   SoCInfo   vector_core_cnt    the table's vector cores
//   local memory sizes           UB and L2 from the table
#include <cctype>
#include <string>

#include "platform/platform_info.h"
#include "platform/platform_infos_def.h"
#include "twin/platform.h"

namespace fe {

namespace {

// The SoC family in CANN's spelling: the table's op_def name ("ascend910b", "ascend910_93") with
// its first letter and the letters after the digits in capitals.
std::string ShortSocVersion(const char *short_name)
{
    std::string out(short_name);
    bool after_digit = false;
    for (size_t i = 0; i < out.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(out[i]);
        if (i == 0 || (after_digit && std::isalpha(c))) {
            out[i] = static_cast<char>(std::toupper(c));
        }
        after_digit = std::isdigit(c) != 0;
    }
    return out;
}

constexpr const char *kNpuArchDavC220 = "2201";
constexpr const char *kSplitCoreTypes = "CubeCore,VectorCore";

}  // namespace

void PlatFormInfos::Refuse(const std::string &what) const
{
    refused_.push_back(what + " is not in the project's SoC table (twin/platform.h), so the stand-in "
                              "platform does not answer it");
}

bool PlatFormInfos::GetPlatformRes(const std::string &label, const std::string &key, std::string &val)
{
    if (soc_ == nullptr) {
        Refuse("the platform of an unset SoC");
        return false;
    }
    if (label == "version" && key == "SoC_version") {
        val = soc_->name;
    } else if (label == "version" && key == "Short_SoC_version") {
        val = ShortSocVersion(soc_->short_name);
    } else if (label == "version" && key == "NpuArch") {
        val = kNpuArchDavC220;
    } else if (label == "SoCInfo" && key == "core_type_list") {
        val = kSplitCoreTypes;
    } else if (label == "SoCInfo" && key == "vector_core_cnt") {
        val = std::to_string(soc_->vector_cores);
    } else {
        Refuse("[" + label + "] " + key);
        return false;
    }
    return true;
}

bool PlatFormInfos::GetPlatformResWithLock(const std::string &label, const std::string &key, std::string &val)
{
    return GetPlatformRes(label, key, val);
}

void PlatFormInfos::GetLocalMemSize(const LocalMemType &mem_type, uint64_t &size)
{
    size = 0;
    if (soc_ != nullptr && mem_type == LocalMemType::UB) {
        size = soc_->ub_bytes;
    } else if (soc_ != nullptr && mem_type == LocalMemType::L2) {
        size = soc_->l2_bytes;
    } else {
        Refuse("the size of local memory type " + std::to_string(static_cast<int>(mem_type)));
    }
}

void PlatFormInfos::GetLocalMemBw(const LocalMemType &mem_type, uint64_t &bw_size)
{
    bw_size = 0;
    Refuse("the bandwidth of local memory type " + std::to_string(static_cast<int>(mem_type)));
}

uint32_t PlatFormInfos::GetCoreNum() const
{
    // CANN answers the count of the core type last set; the table holds only the vector cores.
    if (core_type_ != "VectorCore" || soc_ == nullptr) {
        Refuse("the core count of core type '" + core_type_ + "'");
        return 0;
    }
    return soc_->vector_cores;
}

void PlatFormInfos::SetCoreNumByCoreType(const std::string &core_type)
{
    core_type_ = core_type;
}

PlatformInfoManager &PlatformInfoManager::Instance()
{
    static PlatformInfoManager instance;
    return instance;
}

uint32_t PlatformInfoManager::InitRuntimePlatformInfos(const std::string &)
{
    return 1;  // no platform ini files here: a tiling gets its platform from its TilingContext
}

uint32_t PlatformInfoManager::GetRuntimePlatformInfosByDevice(uint32_t, PlatFormInfos &)
{
    return 1;
}

}  // namespace fe
