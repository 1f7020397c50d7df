// SPDX-License-Identifier: BSD-3-Clause
// Register and cache helpers of the A2 vector core that CANN's kernels call directly (the API of
// CANN's impl/dav_c220/kernel_operator_reg_others_impl.h and kernel_utils):
// - AscendCUtils::SetMask<T>(len) / SetMask<T>(maskHigh, maskLow): write the vector mask register
//   as SetVectorMask does (len: the first len lanes of a repeat; 64 and the full repeat, or 128 and
//   more, as the documented whole-register patterns);
// - GetAccVal(): the sum register of the last count-form ReduceSum as 64 raw bits (the older name of
//   GetReduceRepeatSumSpr; a float result sits in the low 32 bits), refused before any ran;
// - SetDeqScale(half): the scale register of the int32_t -> half Cast, kept, not modelled further;
// - DataCacheCleanAndInvalid<T, CacheLine[, DcciDst]>(tensor): writes dirty data-cache lines back to
//   GM and drops them. The twin's scalar GM stores reach GM at once (it has no data-cache model), so
//   this orders nothing more; a SINGLE_CACHE_LINE one still names GM inside a kernel buffer.
#pragma once
#include <cstdint>
#include <cstring>

#include "constants.h"
#include "memory.h"
#include "vector.h"

namespace AscendC {

class AscendCUtils {
public:
    // Elements of `dtypeSize` bytes in one 32-byte block.
    static int32_t GetC0Count(const int32_t dtypeSize)
    {
        TWIN_CHECK(dtypeSize > 0, "AscendCUtils::GetC0Count", "dtypeSize must be positive (got ", dtypeSize, ")");
        return DEFAULT_C0_SIZE / dtypeSize;
    }

    template <typename T, bool isSetMask = true>
    static void SetMask(const uint64_t &maskHigh, const uint64_t &maskLow)
    {
        if constexpr (isSetMask) {
            twin::WriteMaskRegister("AscendCUtils::SetMask", maskHigh, maskLow);
        }
    }

    template <typename T, bool isSetMask = true>
    static void SetMask(int32_t len)
    {
        if constexpr (!isSetMask) {
            return;
        }
        constexpr int32_t half = 64;  // lanes per 64-bit mask register
        const int32_t lanes = DEFAULT_BLOCK_SIZE / int32_t(sizeof(T));
        if (len == half) {
            SetMask<T>(0, FULL_MASK);
        } else if (len == lanes || len >= 2 * half) {
            SetMask<T>(FULL_MASK, FULL_MASK);
        } else if (len > half) {
            SetMask<T>((uint64_t(1) << (len - half)) - 1, FULL_MASK);
        } else {
            TWIN_CHECK(len >= 0, "AscendCUtils::SetMask", "len must not be negative (got ", len, ")");
            SetMask<T>(0, (uint64_t(1) << len) - 1);
        }
    }
};

inline int64_t GetAccVal()
{
    const twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.reduce_sum_spr_bytes != 0, "GetAccVal",
               "reads the result of the count form of ReduceSum, and none with a defined result ran on this core");
    int64_t bits = 0;
    std::memcpy(&bits, &core.reduce_sum_spr, core.reduce_sum_spr_bytes);
    return bits;
}

// SetDeqScale(half): the DEQSCALE register the int32_t -> half Cast multiplies by on A2. The twin
// keeps the value per core; that Cast itself is not modelled (it is refused when run, cast.h).
inline half &DeqScaleRegister()
{
    static thread_local half scale = half(1.0f);
    return scale;
}

inline void SetDeqScale(half scale) { DeqScaleRegister() = scale; }

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

template <typename T, CacheLine entireType, DcciDst dcciDst = DcciDst::CACHELINE_OUT>
void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst)
{
    if constexpr (entireType == CacheLine::SINGLE_CACHE_LINE) {
        twin::CheckGm("DataCacheCleanAndInvalid", dst.GetPhyAddr(), sizeof(T));
    }
    twin::OnScalarGm();
}

template <typename T, CacheLine entireType, DcciDst dcciDst>
void DataCacheCleanAndInvalid(const LocalTensor<T> &dst)
{
    (void)dst;
    twin::OnScalarGm();
}

}  // namespace AscendC
