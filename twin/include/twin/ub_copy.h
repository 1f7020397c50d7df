// SPDX-License-Identifier: BSD-3-Clause
// Copy: UB -> UB on the vector pipe in the repeat form, with a lane mask and block strides
// (CopyRepeatParams: block strides 16 bits, repeat strides 0..4095 blocks). A2 types: int16_t,
// uint16_t, half, bfloat16_t, int32_t, uint32_t, float. Bytes and their definedness move unchanged.
// Rules: vector.h's placement, footprint, overlap and mask rules.
#pragma once
#include <cstdint>
#include <cstring>

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

template <typename T>
void CopyLanes(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, const LanePlan &p,
               const AscendC::CopyRepeatParams &rp)
{
    const char *call = "Copy";
    dst.Check(call);
    src.Check(call);
    TWIN_CHECK_DTYPE((kIsOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>), call,
                     "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t and float", T);
    CheckStride(call, "dstRepeatSize", rp.dstRepeatSize, 12);
    CheckStride(call, "srcRepeatSize", rp.srcRepeatSize, 12);
    const VecOperand ops[2] = {Operand("dst", dst, rp.dstStride, rp.dstRepeatSize),
                               Operand("src", src, rp.srcStride, rp.srcRepeatSize)};
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) {
        std::memmove(core.ub.data() + off[0], core.ub.data() + off[1], n * sizeof(T));
        std::memmove(core.shadow.data() + off[0], core.shadow.data() + off[1], n * sizeof(T));
    });
}

}  // namespace twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const uint8_t repeatTime,
          const CopyRepeatParams &repeatParams)
{
    twin::CopyLanes(dst, src, twin::RepeatPlan("Copy", twin::Lanes<T>(), repeatTime, mask, isSetMask), repeatParams);
}

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask, const uint8_t repeatTime,
          const CopyRepeatParams &repeatParams)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Copy", twin::Lanes<T>(), mask, bits);
    twin::CopyLanes(dst, src, twin::RepeatPlan("Copy", twin::Lanes<T>(), repeatTime, bits, isSetMask), repeatParams);
}

}  // namespace AscendC
