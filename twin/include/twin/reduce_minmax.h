// SPDX-License-Identifier: BSD-3-Clause
// Max and min reductions of the twin: WholeReduceMax / WholeReduceMin (one extreme per repeat,
// with its index, in the layout ReduceOrder names), BlockReduceMax / BlockReduceMin (one per
// 32-byte block) and ReduceMax / ReduceMin over a whole tensor (count and repeat forms, calIndex).
// A2 supports half and float.
//
// Semantics from the public Ascend C documentation (ReduceRepeat, ReduceDataBlock, ReduceMax):
// of equal extremes the lowest index wins; an index is stored in the bits of the value type
// (uint16 for half, uint32 for float; ORDER_ONLY_INDEX writes a uint32 for both); a group without
// active lanes leaves dst as it was. ReduceMax / ReduceMin index the element as the repeat walk
// addresses it (repeat r, lane l: r * srcRepStride * elements per block + l). How NaN compares is
// not documented; the twin keeps the first of the values a NaN is compared with.
// Cost (an assumption: no public figure per instruction): one vector repeat per repeat issued,
// as the sums are charged; ReduceMax / ReduceMin charge every round the real one issues
// (per-repeat extremes, then the extremes of those pairs until one is left).
#pragma once
#include "reduce_engine.h"

namespace AscendC {
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
}  // namespace AscendC

namespace twin {

struct Extreme {
    float value = 0.0f;
    uint32_t lane = 0;  // lane of the extreme, counted from the first lane looked at
    bool any = false;   // some lane was active
    bool defined = true;
};

// The largest (is_max) or smallest of the lanes [l0, l0 + n) of repeat r that mask m selects.
template <typename T>
Extreme LaneExtreme(const VecOperand &src, uint32_t r, uint32_t l0, uint32_t n, const uint64_t m[2], bool is_max)
{
    Extreme e;
    const CoreState &core = Core();
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t l = l0 + i;
        if (!((m[l / 64] >> (l % 64)) & 1)) continue;
        const uint64_t at = src.LaneByte(r, l);
        T x;
        std::memcpy(&x, core.ub.data() + at, sizeof(T));
        const float v = float(x);
        e.defined = e.defined && core.AllDefined(static_cast<uint32_t>(at), sizeof(T));
        if (!e.any || (is_max ? v > e.value : v < e.value)) {
            e.value = v;
            e.lane = i;
        }
        e.any = true;
    }
    return e;
}

// An index in the bits of T (half: uint16, float: uint32), as the hardware stores it.
template <typename T>
T IndexBits(uint32_t index)
{
    T out;
    if constexpr (sizeof(T) == 2) {
        const uint16_t i = static_cast<uint16_t>(index);
        std::memcpy(&out, &i, 2);
    } else {
        std::memcpy(&out, &index, 4);
    }
    return out;
}

// Bytes one repeat's result takes (and the dstRepStride unit) under `order`: documented table
// "目的操作数地址对齐约束及dstRepStride单位" of ReduceRepeat.
template <typename T>
uint32_t ResultBytes(AscendC::ReduceOrder order)
{
    switch (order) {
    case AscendC::ReduceOrder::ORDER_ONLY_VALUE: return sizeof(T);
    case AscendC::ReduceOrder::ORDER_ONLY_INDEX: return 4;
    default: return 2 * sizeof(T);
    }
}

// Writes one repeat's extreme at byte `at` of UB in the layout of `order`.
template <typename T>
void WriteExtreme(uint32_t at, const Extreme &e, uint32_t index, AscendC::ReduceOrder order)
{
    const T value = T(e.value), idx = IndexBits<T>(index);
    switch (order) {
    case AscendC::ReduceOrder::ORDER_VALUE_INDEX:
        WriteResult(at, &value, sizeof(T), e.defined);
        WriteResult(at + sizeof(T), &idx, sizeof(T), e.defined);
        break;
    case AscendC::ReduceOrder::ORDER_INDEX_VALUE:
        WriteResult(at, &idx, sizeof(T), e.defined);
        WriteResult(at + sizeof(T), &value, sizeof(T), e.defined);
        break;
    case AscendC::ReduceOrder::ORDER_ONLY_VALUE: WriteResult(at, &value, sizeof(T), e.defined); break;
    case AscendC::ReduceOrder::ORDER_ONLY_INDEX: WriteResult(at, &index, 4, e.defined); break;
    }
}

// WholeReduceMax/Min (per_block false: one extreme per repeat, laid out by `order`) and
// BlockReduceMax/Min (per_block true: one value per 32-byte block, 8 per repeat).
template <typename T>
void GroupExtremes(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                   const LanePlan &p, int64_t dstRepStride, int64_t srcBlkStride, int64_t srcRepStride, bool is_max,
                   bool per_block, AscendC::ReduceOrder order = AscendC::ReduceOrder::ORDER_ONLY_VALUE)
{
    dst.Check(call);
    src.Check(call);
    CheckReduceType<T>(call);
    TWIN_CHECK(static_cast<int>(order) >= 0 && static_cast<int>(order) <= 3, call,
               "order must be a ReduceOrder, in [0, 3] on A2 (got ", static_cast<int>(order), ")");
    CheckStride(call, "dstRepStride", uint64_t(dstRepStride), 16);
    CheckStride(call, "srcBlkStride", uint64_t(srcBlkStride), 16);
    CheckStride(call, "srcRepStride", uint64_t(srcRepStride), 16);
    const VecOperand s = Operand("src", src, uint32_t(srcBlkStride), uint32_t(srcRepStride));
    CheckPlacement(call, s, p);
    const uint32_t per = kUbBlockBytes / sizeof(T), groups = per_block ? 8 : 1, d0 = dst.ByteOffset();
    const uint32_t unit = per_block ? 8 * sizeof(T) : ResultBytes<T>(order);
    TWIN_CHECK(d0 % unit == 0, call, "dst must be ", unit, "-byte aligned for ", TypeName<T>(),
               per_block ? "" : " in this ReduceOrder", " (byte offset ", d0, ")");
    const uint64_t step = uint64_t(dstRepStride) * unit;
    const uint64_t need = p.repeats ? (p.repeats - 1) * step + unit : 0;
    TWIN_CHECK(need <= dst.BytesToBufferEnd(), call, "dst must hold one result of ", unit,
               " bytes per repeat, dstRepStride results apart, inside its buffer (needs ", need,
               " bytes, the buffer has ", dst.BytesToBufferEnd(), ")");
    CheckReduceOverlap(call, d0, step, unit, s, p);
    if (p.Empty()) return;
    const VecOperand ops[2] = {Operand("dst", dst), s};
    VectorPipeAccess(call, ops);
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        for (uint32_t g = 0; g < groups; ++g) {
            const uint32_t l0 = per_block ? g * per : 0;
            const Extreme e = LaneExtreme<T>(s, r, l0, per_block ? per : p.lanes, m, is_max);
            if (!e.any) continue;
            const uint32_t at = static_cast<uint32_t>(d0 + r * step + g * sizeof(T));
            if (per_block) {
                const T value = T(e.value);
                WriteResult(at, &value, sizeof(T), e.defined);
            } else {
                WriteExtreme<T>(at, e, e.lane, order);
            }
        }
    }
}

// Elements of sharedTmpBuffer ReduceMax / ReduceMin read, after asc-tools' CPU-debug check: the
// (value, index) pair of every repeat; with calIndex the following rounds keep theirs too, each
// round starting 32-byte aligned.
inline uint64_t ExtremeWorkElements(uint64_t repeats, uint32_t elem, bool cal_index)
{
    const uint64_t first = 2 * repeats;
    if (!cal_index || first == 2) return first;
    const uint64_t per_block = kUbBlockBytes / elem, lanes = kRepeatBytes / elem;
    const auto aligned = [&](uint64_t n) { return (n + per_block - 1) / per_block * per_block; };
    const auto round = [&](uint64_t n) { return 2 * ((n + lanes - 1) / lanes); };
    const uint64_t second_at = aligned(first), second = round(first);
    if (second == 2) return second_at + 2;
    uint64_t last_at = aligned(second_at + second);
    if (second > lanes) last_at = aligned(last_at + round(second));
    return last_at + 2;
}

// ReduceMax / ReduceMin: the extreme of all active lanes into dst[0] and, with calIndex, its
// index into dst[1]; the per-repeat (value, index) pairs go to sharedTmpBuffer as in the real
// first round. work_repeats: the repeats sharedTmpBuffer is sized by (the count form sizes it by
// its whole repeats, at least one, and handles a partial last repeat in the same space).
template <typename T>
void ExtremeAll(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                const AscendC::LocalTensor<T> &work, const LanePlan &p, int64_t srcRepStride, bool cal_index,
                bool is_max, uint64_t work_repeats)
{
    const VecOperand s = WholeTensorOperands(call, dst, src, work, p, srcRepStride);
    const uint32_t results = cal_index ? 2 : 1;
    TWIN_CHECK(dst.BytesToBufferEnd() >= results * sizeof(T), call, "dst must have room for ", results,
               cal_index ? " elements (value and index)" : " element", " inside its buffer");
    TWIN_CHECK(work.ByteOffset() % kUbBlockBytes == 0, call,
               "sharedTmpBuffer must start 32-byte aligned in UB (byte offset ", work.ByteOffset(), ")");
    const uint64_t work_bytes = ExtremeWorkElements(work_repeats, sizeof(T), cal_index) * sizeof(T);
    TWIN_CHECK(work_bytes <= work.BytesToBufferEnd(), call, "sharedTmpBuffer must hold every round's (value, index) "
               "pairs", cal_index ? ", each round 32-byte aligned" : "", " (needs ", work_bytes,
               " bytes, the buffer has ", work.BytesToBufferEnd(), ")");
    if (p.Empty()) return;
    const VecOperand ops[2] = {Operand("dst", dst), s};
    VectorPipeAccess(call, ops);
    PipeAccess(call, work.Slot(), Pipe::V, true);
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    for (uint64_t n = 2 * uint64_t(p.repeats); n > 2; n = 2 * ((n + p.lanes - 1) / p.lanes)) {
        const uint64_t rounds = (n + p.lanes - 1) / p.lanes;
        OnVector(rounds, n / 2, rounds * p.lanes, VecClass::kReduce);
    }
    thread_local std::vector<Extreme> per_repeat;
    per_repeat.assign(p.repeats, Extreme());
    Extreme best;
    uint64_t best_index = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        const Extreme e = per_repeat[r] = LaneExtreme<T>(s, r, 0, p.lanes, m, is_max);
        if (!e.any) continue;
        const bool defined = best.defined && e.defined;
        if (!best.any || (is_max ? e.value > best.value : e.value < best.value)) {
            best = e;
            best_index = uint64_t(r) * srcRepStride * (kUbBlockBytes / sizeof(T)) + e.lane;
        }
        best.defined = defined;
    }
    for (uint32_t r = 0; r < p.repeats; ++r) {
        if (per_repeat[r].any) WriteExtreme<T>(work.ByteOffset() + r * 2 * sizeof(T), per_repeat[r], per_repeat[r].lane,
                                               AscendC::ReduceOrder::ORDER_VALUE_INDEX);
    }
    if (!best.any) return;
    const T value = T(best.value), index = IndexBits<T>(static_cast<uint32_t>(best_index));
    WriteResult(dst.ByteOffset(), &value, sizeof(T), best.defined);
    if (cal_index) WriteResult(dst.ByteOffset() + sizeof(T), &index, sizeof(T), best.defined);
}

// The plan of a reduction's mask argument: a continuous length or a bit mask.
inline LanePlan MaskArgPlan(const char *call, uint32_t lanes, int32_t mask, int32_t repeat, bool is_set_mask,
                            uint32_t max_repeat = kMaxRepeat)
{
    uint64_t bits[2] = {0, 0};
    if (is_set_mask) ContinuousMaskBits(call, lanes, uint64_t(uint32_t(mask)), bits);
    return RepeatPlan(call, lanes, repeat, bits, is_set_mask, max_repeat);
}
inline LanePlan MaskArgPlan(const char *call, uint32_t lanes, const uint64_t mask[], int32_t repeat, bool is_set_mask,
                            uint32_t max_repeat = kMaxRepeat)
{
    return RepeatPlan(call, lanes, repeat, mask, is_set_mask, max_repeat);
}

}  // namespace twin

namespace AscendC {

#define TWIN_EXTREME_API(Name, IS_MAX)                                                                                 \
    template <typename T>                                                                                              \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,            \
              const int32_t count, bool calIndex = 0)                                                                  \
    {                                                                                                                  \
        const int64_t most = twin::Core().soc->ub_bytes / sizeof(T);                                                   \
        TWIN_CHECK(count >= 0 && count <= most, #Name, "count must be in [0, UB bytes / sizeof(T)] = [0, ", most,     \
                   "] (got ", count, ")");                                                                             \
        twin::ExtremeAll(#Name, dst, src, sharedTmpBuffer, twin::CountPlan(twin::Lanes<T>(), uint64_t(count)), 8,     \
                         calIndex, IS_MAX, std::max<uint64_t>(1, uint64_t(count) / twin::Lanes<T>()));               \
        twin::RestoreDefaultMask();                                                                                    \
    }                                                                                                                  \
    template <typename T>                                                                                              \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,            \
              const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0)             \
    {                                                                                                                  \
        twin::ExtremeAll(#Name, dst, src, sharedTmpBuffer,                                                             \
                         twin::MaskArgPlan(#Name, twin::Lanes<T>(), mask, repeatTime, true, INT32_MAX), srcRepStride,  \
                         calIndex, IS_MAX, uint64_t(std::max(repeatTime, 0)));                                        \
    }                                                                                                                  \
    template <typename T>                                                                                              \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,            \
              const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0)          \
    {                                                                                                                  \
        twin::ExtremeAll(#Name, dst, src, sharedTmpBuffer,                                                             \
                         twin::MaskArgPlan(#Name, twin::Lanes<T>(), mask, repeatTime, true, INT32_MAX), srcRepStride,  \
                         calIndex, IS_MAX, uint64_t(std::max(repeatTime, 0)));                                        \
    }
TWIN_EXTREME_API(ReduceMax, true)
TWIN_EXTREME_API(ReduceMin, false)
#undef TWIN_EXTREME_API

#define TWIN_GROUP_EXTREME_API(Whole, Block, IS_MAX)                                                                   \
    template <typename T, bool isSetMask = true>                                                                       \
    void Whole(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask, const int32_t repeatTime,    \
               const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,                     \
               ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)                                                     \
    {                                                                                                                  \
        twin::GroupExtremes(#Whole, dst, src, twin::MaskArgPlan(#Whole, twin::Lanes<T>(), mask, repeatTime, isSetMask), \
                            dstRepStride, srcBlkStride, srcRepStride, IS_MAX, false, order);                           \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    void Whole(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const int32_t repeatTime, \
               const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,                     \
               ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)                                                     \
    {                                                                                                                  \
        twin::GroupExtremes(#Whole, dst, src, twin::MaskArgPlan(#Whole, twin::Lanes<T>(), mask, repeatTime, isSetMask), \
                            dstRepStride, srcBlkStride, srcRepStride, IS_MAX, false, order);                           \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    void Block(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const int32_t mask,    \
               const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)                     \
    {                                                                                                                  \
        twin::GroupExtremes(#Block, dst, src, twin::MaskArgPlan(#Block, twin::Lanes<T>(), mask, repeatTime, isSetMask), \
                            dstRepStride, srcBlkStride, srcRepStride, IS_MAX, true);                                   \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    void Block(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const uint64_t mask[], \
               const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)                     \
    {                                                                                                                  \
        twin::GroupExtremes(#Block, dst, src, twin::MaskArgPlan(#Block, twin::Lanes<T>(), mask, repeatTime, isSetMask), \
                            dstRepStride, srcBlkStride, srcRepStride, IS_MAX, true);                                   \
    }
TWIN_GROUP_EXTREME_API(WholeReduceMax, BlockReduceMax, true)
TWIN_GROUP_EXTREME_API(WholeReduceMin, BlockReduceMin, false)
#undef TWIN_GROUP_EXTREME_API

}  // namespace AscendC
