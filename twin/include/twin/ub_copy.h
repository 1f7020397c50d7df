// SPDX-License-Identifier: BSD-3-Clause
// Copy: UB -> UB on the vector pipe in the repeat form, with a lane mask and block strides
// (CopyRepeatParams: block strides 16 bits, repeat strides 0..4095 blocks). A2 types: int16_t,
// uint16_t, half, bfloat16_t, int32_t, uint32_t, float. Bytes and their definedness move unchanged.
// Rules: vector.h's placement, footprint, overlap and mask rules.
//
// Counter mode differs from every other vector instruction (asc-devkit's Copy page, its Counter-mode
// constraint and figure): repeatTime counts (0 is a NOP), and each repeat copies the first `count`
// elements of the mask register as ceil(count x sizeof(T) / 32) consecutive blocks at the block
// strides, past the 8 blocks of a normal repeat; repeats lie dstRepeatSize / srcRepeatSize blocks
// apart. asc-devkit's copy_ub2ub scenario 3 (144 int32 in one repeat, srcStride 8: eighteen rows),
// the advanced API's BroadCast on A2 (one row of `count` elements per repeat, repeatTime rows) and the
// Ascend 950 emulation of A2's Copy (a loop over repeatTime of `count`-element runs) all read it so.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "vector.h"

namespace AscendC {

struct CopyRepeatParams {
    CopyRepeatParams() = default;
    CopyRepeatParams(uint16_t dstStrideIn, uint16_t srcStrideIn, uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn)
    {
    }
    uint16_t dstStride = 1, srcStride = 1;
    uint16_t dstRepeatSize = 8, srcRepeatSize = 8;
};

}  // namespace AscendC

namespace twin {

// Moves the bytes (and their definedness) of every run of a plan.
template <size_t N>
inline void CopyRuns(const LanePlan &p, const VecOperand (&ops)[N], uint32_t elem)
{
    CoreState &core = Core();
    ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) {
        std::memmove(core.ub.data() + off[0], core.ub.data() + off[1], n * elem);
        std::memmove(core.shadow.data() + off[0], core.shadow.data() + off[1], n * elem);
    });
}

inline VecOperand ShiftedBlocks(VecOperand o, uint64_t blocks)
{
    o.offset += static_cast<uint32_t>(blocks * kUbBlockBytes);
    return o;
}

// Copy in Counter mode: repeatTime repeats of `count` elements each (see the file comment). One
// repeat is the plan of a count-form instruction whose 8-block groups follow one another at the
// block stride (group stride = 8 x block stride), shifted by the repeat size per repeat.
inline void CopyCounter(const char *call, const VecOperand (&base)[2], uint64_t count, uint32_t repeat_time,
                        const uint16_t (&repeat_size)[2], uint32_t lanes)
{
    LanePlan one = CountPlan(lanes, count);
    VecOperand ops[2] = {base[0], base[1]};
    for (VecOperand &o : ops) o.rep = 8 * o.blk;
    uint64_t first[2], end[2];
    for (int i = 0; i < 2; ++i) {
        const VecOperand &o = ops[i];
        TWIN_CHECK(o.offset % o.align == 0, call, "the ", o.role, " operand must start ", o.align,
                   "-byte aligned in UB (byte offset ", o.offset, ")");
        Footprint(o, one, first[i], end[i]);
        if (repeat_time > 0) end[i] += uint64_t(repeat_time - 1) * repeat_size[i] * kUbBlockBytes;
        TWIN_CHECK(one.Empty() || end[i] - o.offset <= o.to_end, call, "the ", o.role,
                   " operand's footprint (repeatTime x repeat size + count elements at the block stride, Counter "
                   "mode) must stay inside its buffer (needs ", end[i] - o.offset, " bytes from its start, the "
                   "buffer has ", o.to_end, ")");
    }
    if (one.Empty() || repeat_time == 0) return;  // a NOP on A2
    const bool apart = end[0] <= first[1] || end[1] <= first[0];
    const bool in_place = ops[0].offset == ops[1].offset && ops[0].blk == ops[1].blk && repeat_size[0] == repeat_size[1];
    if (!apart && !in_place) {
        // Within a repeat the general rule; across repeats none may read what an earlier one wrote.
        std::vector<uint32_t> writer(Core().ub.size() / kUbBlockBytes, UINT32_MAX);
        for (uint32_t r = 0; r < repeat_time; ++r) {
            const VecOperand d = ShiftedBlocks(ops[0], uint64_t(r) * repeat_size[0]);
            const VecOperand s = ShiftedBlocks(ops[1], uint64_t(r) * repeat_size[1]);
            CheckOverlap(call, d, s, one);
            for (uint32_t k = 0; k < one.repeats; ++k) {
                ForEachBlock(s, one, k, [&](uint32_t b, uint32_t) {
                    TWIN_CHECK(writer[b] == UINT32_MAX || writer[b] == r, call, "the src operand of repeat ", r,
                               " reads what the dst operand of repeat ", writer[b],
                               " wrote: across repeats source and destination must not overlap (address overlap rule)");
                });
            }
            for (uint32_t k = 0; k < one.repeats; ++k) {
                ForEachBlock(d, one, k, [&](uint32_t b, uint32_t) {
                    if (writer[b] == UINT32_MAX) writer[b] = r;
                });
            }
        }
    }
    PipeAccess(call, ops[1].slot, Pipe::V, false, first[1], end[1]);
    PipeAccess(call, ops[0].slot, Pipe::V, true, first[0], end[0]);
    OnVector(uint64_t(repeat_time) * one.repeats, uint64_t(repeat_time) * count,
             uint64_t(repeat_time) * one.repeats * lanes);
    for (uint32_t r = 0; r < repeat_time; ++r) {
        const VecOperand shifted[2] = {ShiftedBlocks(ops[0], uint64_t(r) * repeat_size[0]),
                                       ShiftedBlocks(ops[1], uint64_t(r) * repeat_size[1])};
        CopyRuns(one, shifted, ops[0].elem);
    }
}

// bits: the mask the call passes (nullptr with isSetMask = false: the core's mask registers apply).
template <typename T>
void CopyCall(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, const uint64_t *bits,
              bool is_set_mask, uint32_t repeat_time, const AscendC::CopyRepeatParams &rp)
{
    const char *call = "Copy";
    dst.Check(call);
    src.Check(call);
    TWIN_CHECK_DTYPE((kIsOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>), call,
                     "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t and float", T);
    CheckStride(call, "dstRepeatSize", rp.dstRepeatSize, 12);
    CheckStride(call, "srcRepeatSize", rp.srcRepeatSize, 12);
    const LanePlan p = RepeatPlan(call, Lanes<T>(), repeat_time, bits, is_set_mask);
    const VecOperand ops[2] = {Operand("dst", dst, rp.dstStride, rp.dstRepeatSize),
                               Operand("src", src, rp.srcStride, rp.srcRepeatSize)};
    if (p.counter) {
        CopyCounter(call, ops, p.count, repeat_time, {rp.dstRepeatSize, rp.srcRepeatSize}, Lanes<T>());
        return;
    }
    if (!Issue(call, ops, p)) return;
    CopyRuns(p, ops, sizeof(T));
}

}  // namespace twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const uint8_t repeatTime,
          const CopyRepeatParams &repeatParams)
{
    twin::CopyCall(dst, src, isSetMask ? mask : nullptr, isSetMask, repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask, const uint8_t repeatTime,
          const CopyRepeatParams &repeatParams)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Copy", twin::Lanes<T>(), mask, bits);
    twin::CopyCall(dst, src, isSetMask ? bits : nullptr, isSetMask, repeatTime, repeatParams);
}

}  // namespace AscendC
