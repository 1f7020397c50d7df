// SPDX-License-Identifier: BSD-3-Clause
// The reductions named by ReduceType: ReduceDataBlock (one result per 32-byte block),
// ReduceRepeat (one per repeat) and ReducePairElem (one per pair of neighbouring lanes), the newer
// names of BlockReduceSum/Max/Min, WholeReduceSum/Max/Min and PairReduceSum. Each call's rules and
// results are those of the instruction it names (reduce.h, reduce_minmax.h); errors name the call
// as the kernel wrote it. On A2 dst and src have one type, half or float (a compile error otherwise,
// as in CANN's headers).
#pragma once
#include "reduce.h"
#include "reduce_minmax.h"

namespace AscendC {

enum class ReduceType { NONE = -1, SUM = 0, MAX, MIN };

template <typename T, bool isSetMask = true>
void PairReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const int32_t mask,
                   const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::GroupSums("PairReduceSum", dst, src,
                    twin::MaskArgPlan("PairReduceSum", twin::Lanes<T>(), mask, repeatTime, isSetMask), dstRepStride,
                    srcBlkStride, srcRepStride, 2);
}

template <typename T, bool isSetMask = true>
void PairReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,
                   const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                   const int32_t srcRepStride)
{
    twin::GroupSums("PairReduceSum", dst, src,
                    twin::MaskArgPlan("PairReduceSum", twin::Lanes<T>(), mask, repeatTime, isSetMask), dstRepStride,
                    srcBlkStride, srcRepStride, 2);
}

}  // namespace AscendC

namespace twin {

// The call's name as the kernel wrote it, by its ReduceType.
template <AscendC::ReduceType kind>
constexpr const char *KindName(const char *sum, const char *max, const char *min)
{
    return kind == AscendC::ReduceType::SUM ? sum : kind == AscendC::ReduceType::MAX ? max : min;
}

template <AscendC::ReduceType kind, typename T, typename U>
constexpr void CheckTyped()
{
    static_assert(kind == AscendC::ReduceType::SUM || kind == AscendC::ReduceType::MAX ||
                      kind == AscendC::ReduceType::MIN,
                  "reduceType must be ReduceType::SUM, MAX or MIN");
    static_assert(std::is_same_v<T, U>, "on A2 dst and src of a ReduceType reduction must have the same type");
}

template <AscendC::ReduceType kind, typename T, typename Mask>
void DataBlock(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, Mask mask, int32_t repeatTime,
               int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, bool is_set_mask)
{
    const char *call = KindName<kind>("ReduceDataBlock<SUM>", "ReduceDataBlock<MAX>", "ReduceDataBlock<MIN>");
    const LanePlan p = MaskArgPlan(call, Lanes<T>(), mask, repeatTime, is_set_mask);
    if constexpr (kind == AscendC::ReduceType::SUM) {
        GroupSums(call, dst, src, p, dstRepStride, srcBlkStride, srcRepStride, kUbBlockBytes / sizeof(T));
    } else {
        GroupExtremes(call, dst, src, p, dstRepStride, srcBlkStride, srcRepStride, kind == AscendC::ReduceType::MAX, true);
    }
}

template <AscendC::ReduceType kind, typename T, typename Mask>
void Repeat(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, Mask mask, int32_t repeatTime,
            int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, bool is_set_mask,
            AscendC::ReduceOrder order)
{
    const char *call = KindName<kind>("ReduceRepeat<SUM>", "ReduceRepeat<MAX>", "ReduceRepeat<MIN>");
    const LanePlan p = MaskArgPlan(call, Lanes<T>(), mask, repeatTime, is_set_mask);
    if constexpr (kind == AscendC::ReduceType::SUM) {  // order has no meaning for a sum
        GroupSums(call, dst, src, p, dstRepStride, srcBlkStride, srcRepStride, Lanes<T>());
    } else {
        GroupExtremes(call, dst, src, p, dstRepStride, srcBlkStride, srcRepStride, kind == AscendC::ReduceType::MAX,
                      false, order);
    }
}

}  // namespace twin

namespace AscendC {

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask, const int32_t repeatTime,
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::CheckTyped<reduceType, T, U>();
    twin::DataBlock<reduceType>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, isSetMask);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                     const int32_t srcRepStride)
{
    twin::CheckTyped<reduceType, T, U>();
    twin::DataBlock<reduceType>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, isSetMask);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask, const int32_t repeatTime,
                  const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                  ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    twin::CheckTyped<reduceType, T, U>();
    twin::Repeat<reduceType>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, isSetMask, order);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[], const int32_t repeatTime,
                  const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                  ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    twin::CheckTyped<reduceType, T, U>();
    twin::Repeat<reduceType>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, isSetMask, order);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask, const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    twin::CheckTyped<reduceType, T, U>();
    twin::GroupSums("ReducePairElem<SUM>", dst, src,
                    twin::MaskArgPlan("ReducePairElem<SUM>", twin::Lanes<T>(), mask, repeatTime, isSetMask),
                    dstRepStride, srcBlkStride, srcRepStride, 2);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],
                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride)
{
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    twin::CheckTyped<reduceType, T, U>();
    twin::GroupSums("ReducePairElem<SUM>", dst, src,
                    twin::MaskArgPlan("ReducePairElem<SUM>", twin::Lanes<T>(), mask, repeatTime, isSetMask),
                    dstRepStride, srcBlkStride, srcRepStride, 2);
}

}  // namespace AscendC
