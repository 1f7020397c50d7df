// SPDX-License-Identifier: BSD-3-Clause
// Sum reductions of the twin: ReduceSum (count and repeat forms), WholeReduceSum (one sum per
// repeat; ReduceRepeat<SUM> in newer CANN) and BlockReduceSum (one sum per 32-byte block;
// ReduceDataBlock<SUM>). A2 supports half and float.
//
// Summation order, from the public Ascend C documentation (ReduceSum "关键特性说明",
// ReduceDataBlock "关键特性说明"): within a repeat (and within a block) elements are added by a
// binary tree of neighbours: (e0+e1), (e2+e3), ... then those pairs pairwise, and so on; a lane
// the mask switches off takes no part (its partner passes up unchanged). On Atlas A2/A3 the count
// form of ReduceSum adds the per-repeat sums in order ("方式一"), the repeat form adds them by the
// same binary tree, 64/128 repeat sums per level ("方式二"). Every addition rounds to T (half sums
// are rounded to half at each step). The twin reproduces these orders bit for bit.
// A result is defined only if every lane summed into it is (a poisoned lane reaching it makes it
// undefined, and copying it to GM is then an error).
#pragma once
#include "reduce_engine.h"

namespace twin {

// The pipe accesses of a reduction: src's footprint under the plan, dst's `dst_bytes` results.
template <typename T>
void ReducePipeAccess(const char *call, const AscendC::LocalTensor<T> &dst, const VecOperand &s, const LanePlan &p,
                      uint64_t dst_bytes)
{
    uint64_t first, end;
    Footprint(s, p, first, end);
    PipeAccess(call, s.slot, Pipe::V, false, first, end);
    PipeAccess(call, dst.Slot(), Pipe::V, true, dst.ByteOffset(), dst.ByteOffset() + dst_bytes);
}

// One sum per group of `group_lanes` neighbouring lanes, a repeat's groups written one after
// another from dst + r * dstRepStride * (one repeat's results): WholeReduceSum / ReduceRepeat<SUM>
// (the whole repeat is one group), BlockReduceSum / ReduceDataBlock<SUM> (one group per 32-byte
// block) and PairReduceSum / ReducePairElem<SUM> (pairs). A group without active lanes leaves dst
// as it was.
template <typename T>
void GroupSums(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
               const LanePlan &p, int64_t dstRepStride, int64_t srcBlkStride, int64_t srcRepStride, uint32_t group_lanes)
{
    dst.Check(call);
    src.Check(call);
    CheckReduceType<T>(call);
    CheckStride(call, "dstRepStride", uint64_t(dstRepStride), 16);
    CheckStride(call, "srcBlkStride", uint64_t(srcBlkStride), 16);
    CheckStride(call, "srcRepStride", uint64_t(srcRepStride), 16);
    const VecOperand s = Operand("src", src, uint32_t(srcBlkStride), uint32_t(srcRepStride));
    CheckPlacement(call, s, p);
    const uint32_t groups = p.lanes / group_lanes, d0 = dst.ByteOffset();
    // A2: the element (whole repeat), 16 / 32 bytes (half / float block sums), 32 bytes (pair sums)
    const uint32_t align = std::min<uint32_t>(groups * sizeof(T), kUbBlockBytes);
    TWIN_CHECK(d0 % align == 0, call, "dst must be ", align, "-byte aligned for ", TypeName<T>(), " (byte offset ", d0, ")");
    const uint64_t step = uint64_t(dstRepStride) * groups * sizeof(T);
    const uint64_t need = p.repeats ? (p.repeats - 1) * step + groups * sizeof(T) : 0;
    TWIN_CHECK(need <= dst.BytesToBufferEnd(), call, "dst must hold ", groups, " result(s) per repeat, dstRepStride x ",
               groups, " elements apart, inside its buffer (needs ", need, " bytes, the buffer has ",
               dst.BytesToBufferEnd(), ")");
    CheckReduceOverlap(call, d0, step, groups * sizeof(T), s, p);
    if (p.Empty()) return;
    ReducePipeAccess(call, dst, s, p, need);
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    if (groups == 1) {
        thread_local std::vector<float> sums;
        thread_local std::vector<uint8_t> any, defined;
        RepeatSums<T>(s, p, sums, any, defined);
        for (uint32_t r = 0; r < p.repeats; ++r) {
            const T sum = T(sums[r]);
            if (any[r]) WriteResult(static_cast<uint32_t>(d0 + r * step), &sum, sizeof(T), defined[r]);
        }
        return;
    }
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        for (uint32_t g = 0; g < groups; ++g) {
            bool any = false, defined = true;
            const T sum = T(LaneTree<T>(s, r, g * group_lanes, group_lanes, m, any, defined));
            if (any) WriteResult(static_cast<uint32_t>(d0 + r * step + g * sizeof(T)), &sum, sizeof(T), defined);
        }
    }
}

// ReduceSum: the sum of all selected lanes into dst[0]. in_order: the count form (repeat sums
// added one after another); otherwise the repeat form (repeat sums written to work, then a tree).
template <typename T>
void SumAll(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
            const AscendC::LocalTensor<T> &work, const LanePlan &p, int64_t srcRepStride, bool in_order)
{
    const VecOperand s = WholeTensorOperands(call, dst, src, work, p, srcRepStride);
    TWIN_CHECK(dst.BytesToBufferEnd() >= sizeof(T), call, "dst must have room for the result inside its buffer");
    TWIN_CHECK(work.ByteOffset() % kUbBlockBytes == 0, call, "workLocal must start 32-byte aligned in UB (byte offset ",
               work.ByteOffset(), ")");
    const uint32_t per_block = kUbBlockBytes / sizeof(T);
    const uint64_t work_bytes = in_order ? 0 : uint64_t((p.repeats + per_block - 1) / per_block) * kUbBlockBytes;
    TWIN_CHECK(work_bytes <= work.BytesToBufferEnd(), call, "workLocal must hold the ", p.repeats,
               " repeat sums rounded up to a whole block (needs ", work_bytes, " bytes, the buffer has ",
               work.BytesToBufferEnd(), ")");
    if (p.Empty()) return;
    ReducePipeAccess(call, dst, s, p, sizeof(T));
    if (!in_order) {  // the count form leaves workLocal unused
        PipeAccess(call, work.Slot(), Pipe::V, true, work.ByteOffset(), work.ByteOffset() + work_bytes);
    }
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    thread_local std::vector<float> repeat_sums;  // reused: ReduceSum runs once per tile
    thread_local std::vector<uint8_t> any, repeat_defined;
    RepeatSums<T>(s, p, repeat_sums, any, repeat_defined);
    const float *sum_of = repeat_sums.data();
    const uint8_t *ran = any.data(), *defined_of = repeat_defined.data();
    bool defined = true, first = true;
    float acc = 0.0f;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        if (!ran[r]) continue;
        acc = first ? sum_of[r] : RoundTo<T>(acc + sum_of[r]);
        first = false;
        defined = defined && defined_of[r];
    }
    if (!in_order) {  // the repeat form keeps the repeat sums in workLocal, then sums them by tree
        std::vector<float> sums;
        for (uint32_t r = 0; r < p.repeats; ++r) {
            if (!ran[r]) continue;
            const T v = T(sum_of[r]);
            WriteResult(static_cast<uint32_t>(work.ByteOffset() + sums.size() * sizeof(T)), &v, sizeof(T), defined_of[r]);
            sums.push_back(sum_of[r]);
        }
        acc = TreeOfList<T>(sums, p.lanes);
    }
    const T result = T(acc);
    WriteResult(dst.ByteOffset(), &result, sizeof(T), defined);
    if (in_order) {  // the count form reads its result from the sum register, which keeps it
        CoreState &core = Core();
        std::memcpy(&core.reduce_sum_spr, &result, sizeof(T));
        core.reduce_sum_spr_bytes = defined ? sizeof(T) : 0;
    }
}

}  // namespace twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal, const int32_t count)
{
    const int64_t most = twin::Core().soc->ub_bytes / sizeof(T);
    TWIN_CHECK(count >= 1 && count <= most, "ReduceSum", "count must be in [1, UB bytes / sizeof(T)] = [1, ", most,
               "] (got ", count, ")");
    twin::SumAll("ReduceSum", dst, src, workLocal, twin::CountFormPlan("ReduceSum", twin::Lanes<T>(), count, isSetMask), 8,
                 true);
    if (isSetMask) twin::RestoreDefaultMask();
}

// The sum the last count-form ReduceSum of this core left in its register.
template <typename T>
T GetReduceRepeatSumSpr()
{
    const twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.reduce_sum_spr_bytes != 0, "GetReduceRepeatSumSpr",
               "reads the result of the count form of ReduceSum, and none with a defined result ran on this core");
    TWIN_CHECK(core.reduce_sum_spr_bytes == sizeof(T), "GetReduceRepeatSumSpr", "T must be the ReduceSum's type (",
               int(core.reduce_sum_spr_bytes), "-byte result read as ", twin::TypeName<T>(), ")");
    T value;
    std::memcpy(&value, &core.reduce_sum_spr, sizeof(T));
    return value;
}

// The mask forms always set the mask themselves: unlike the element-wise ones they have no isSetMask.
template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal, const int32_t mask,
               const int32_t repeatTime, const int32_t srcRepStride)
{
    uint64_t bits[2];
    twin::ContinuousMaskBits("ReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::SumAll("ReduceSum", dst, src, workLocal,
                 twin::RepeatPlan("ReduceSum", twin::Lanes<T>(), repeatTime, bits, true, INT32_MAX), srcRepStride, false);
}

template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal,
               const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride)
{
    twin::SumAll("ReduceSum", dst, src, workLocal,
                 twin::RepeatPlan("ReduceSum", twin::Lanes<T>(), repeatTime, mask, true, INT32_MAX), srcRepStride, false);
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask, const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("WholeReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::GroupSums("WholeReduceSum", dst, src, twin::RepeatPlan("WholeReduceSum", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::Lanes<T>());
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::GroupSums("WholeReduceSum", dst, src, twin::RepeatPlan("WholeReduceSum", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::Lanes<T>());
}

// Note the argument order of the older API: repeatTime before mask.
template <typename T, bool isSetMask = true>
void BlockReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const int32_t mask,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("BlockReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::GroupSums("BlockReduceSum", dst, src, twin::RepeatPlan("BlockReduceSum", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::kUbBlockBytes / sizeof(T));
}

template <typename T, bool isSetMask = true>
void BlockReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const uint64_t mask[],
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::GroupSums("BlockReduceSum", dst, src, twin::RepeatPlan("BlockReduceSum", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::kUbBlockBytes / sizeof(T));
}

}  // namespace AscendC
