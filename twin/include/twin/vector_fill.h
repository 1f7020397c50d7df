// SPDX-License-Identifier: BSD-3-Clause
// Data fill instructions of the twin: Duplicate (a scalar into every selected lane), Brcb (each of
// 8 source elements per repeat broadcast into one 32-byte block) and CreateVecIndex (firstValue,
// firstValue + 1, ... in the element type; A2: int16_t, half, int32_t, float). Both take bfloat16_t on A2, as
// they only move bits. Included by vector.h.
#pragma once
#include "vector.h"

namespace twin {

template <typename T>
constexpr bool kFillType = kIsOneOf<T, half, bfloat16_t, float, int16_t, uint16_t, int32_t, uint32_t>;

template <typename T>
void Fill(const char *call, const AscendC::LocalTensor<T> &dst, T value, const LanePlan &p, uint64_t blk, uint64_t rep)
{
    dst.Check(call);
    TWIN_REQUIRE_DTYPE(kFillType<T>, "half, bfloat16_t, float, int16_t, uint16_t, int32_t and uint32_t");
    CheckStride(call, "dstBlockStride", blk, 16);
    CheckStride(call, "dstRepeatStride", rep, 8);
    TWIN_CHECK(blk != 0, call, "dstBlockStride must not be 0 (undefined behaviour on the hardware)");
    const VecOperand ops[1] = {Operand("dst", dst, uint32_t(blk), uint32_t(rep))};
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) {
        T *d = reinterpret_cast<T *>(core.ub.data() + off[0]);
        for (uint32_t i = 0; i < n; ++i) d[i] = value;
        std::memset(core.shadow.data() + off[0], 1, n * sizeof(T));
    });
}

}  // namespace twin

namespace AscendC {

template <typename T>
void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count)
{
    twin::Fill("Duplicate", dst, scalarValue, twin::CountFormPlan("Duplicate", twin::Lanes<T>(), count, true), 1, 8);
    twin::RestoreDefaultMask();
}

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask, int64_t repeatTime,
               uint64_t dstBlockStride, uint64_t dstRepeatStride)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Duplicate", twin::Lanes<T>(), mask, bits);
    twin::Fill("Duplicate", dst, scalarValue, twin::RepeatPlan("Duplicate", twin::Lanes<T>(), repeatTime, bits, isSetMask),
               dstBlockStride, dstRepeatStride);
}

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask[], int64_t repeatTime,
               uint64_t dstBlockStride, uint64_t dstRepeatStride)
{
    twin::Fill("Duplicate", dst, scalarValue, twin::RepeatPlan("Duplicate", twin::Lanes<T>(), repeatTime, mask, isSetMask),
               dstBlockStride, dstRepeatStride);
}

// Repeat i reads src[8i .. 8i+7] and writes element j into the whole j-th block of the repeat
// (blocks dstBlkStride apart, repeats dstRepStride apart; a block stride of 0 counts as 1).
template <typename T>
void Brcb(const LocalTensor<T> &dst, const LocalTensor<T> &src, int64_t repeatTime, const BrcbRepeatParams &params)
{
    const char *call = "Brcb";
    dst.Check(call);
    src.Check(call);
    TWIN_CHECK_DTYPE(twin::kFillType<T>, call, "half, bfloat16_t, float, int16_t, uint16_t, int32_t and uint32_t", T);
    TWIN_CHECK(repeatTime >= 0 && repeatTime <= twin::kMaxRepeat, call, "repeatTime must be in [0, ", twin::kMaxRepeat,
               "] (got ", repeatTime, ")");
    twin::CheckStride(call, "dstBlkStride", params.dstBlkStride, 16);
    twin::CheckStride(call, "dstRepStride", params.dstRepStride, 16);
    const uint32_t blk = params.dstBlkStride == 0 ? 1 : params.dstBlkStride;
    twin::LanePlan plan;  // the destination side: full repeats of 8 blocks
    plan.lanes = twin::Lanes<T>();
    plan.repeats = static_cast<uint32_t>(repeatTime);
    twin::LaneBits(plan.lanes, plan.mask);
    const twin::VecOperand d = twin::Operand("dst", dst, blk, params.dstRepStride);
    twin::VecOperand s = twin::Operand("src", src);
    twin::CheckPlacement(call, d, plan);
    TWIN_CHECK(s.offset % twin::kUbBlockBytes == 0, call, "the src operand must start 32-byte aligned in UB (byte offset ",
               s.offset, ")");
    const uint64_t src_bytes = uint64_t(repeatTime) * 8 * sizeof(T);
    TWIN_CHECK(src_bytes <= s.to_end, call, "the src operand must hold 8 x repeatTime elements inside its buffer (needs ",
               src_bytes, " bytes, the buffer has ", s.to_end, ")");
    uint64_t d0, d1;
    twin::Footprint(d, plan, d0, d1);
    TWIN_CHECK(d1 <= s.offset || s.offset + src_bytes <= d0, call,
               "src and dst must not overlap (Brcb documents no address overlap, so none is supported; stricter than "
               "CANN's CPU debug, which does not check it)");
    if (repeatTime == 0) return;
    twin::PipeAccess(call, s.slot, twin::Pipe::V, false, s.offset, s.offset + src_bytes);
    twin::PipeAccess(call, d.slot, twin::Pipe::V, true, d0, d1);
    twin::OnVector(plan.repeats, plan.ActiveLanes(), uint64_t(plan.repeats) * plan.lanes);
    twin::CoreState &core = twin::Core();
    const uint32_t per_block = twin::kUbBlockBytes / sizeof(T);
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t j = 0; j < 8; ++j) {
            const uint32_t from = s.offset + (r * 8 + j) * sizeof(T);
            const uint32_t to = static_cast<uint32_t>(d.LaneByte(r, j * per_block));
            T value;
            std::memcpy(&value, core.ub.data() + from, sizeof(T));
            T *block = reinterpret_cast<T *>(core.ub.data() + to);
            for (uint32_t k = 0; k < per_block; ++k) block[k] = value;
            for (uint32_t k = 0; k < twin::kUbBlockBytes; ++k) core.shadow[to + k] = core.shadow[from + k % sizeof(T)];
        }
    }
}

// dst[i] = firstValue + i for i < count, computed in T (half rounds each index once).
template <typename T>
void CreateVecIndex(LocalTensor<T> dst, const T &firstValue, uint32_t count)
{
    const char *call = "CreateVecIndex";
    dst.Check(call);
    TWIN_CHECK_DTYPE((twin::kIsOneOf<T, int16_t, half, int32_t, float>), call, "int16_t, half, int32_t and float", T);
    const twin::LanePlan plan = twin::CountPlan(twin::Lanes<T>(), count);
    const twin::VecOperand ops[1] = {twin::Operand("dst", dst)};
    if (!twin::Issue(call, ops, plan)) return;
    T *d = dst.Data();
    for (uint32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>) d[i] = static_cast<T>(int64_t(firstValue) + i);
        else d[i] = T(float(firstValue) + float(i));
    }
    twin::Core().MarkDefined(dst.ByteOffset(), count * sizeof(T));
}

}  // namespace AscendC
