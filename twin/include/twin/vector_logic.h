// SPDX-License-Identifier: BSD-3-Clause
// Bitwise vector instructions: And / Or (element-wise, A2: int16_t and uint16_t) and ShiftLeft /
// ShiftRight by a scalar (A2: int16_t, uint16_t, int32_t, uint32_t; the shift in [0, 16] for 16-bit
// and [0, 32] for 32-bit elements; ShiftRight of a signed type is arithmetic). Count form and the
// repeat forms with vector.h's placement, stride, overlap and mask rules.
#pragma once
#include <cstdint>

#include "vector.h"

namespace twin {

struct AndOp { template <typename C> static C F(C a, C b) { return a & b; } };
struct OrOp { template <typename C> static C F(C a, C b) { return a | b; } };
// Computed on the element widened to int64 (sign- or zero-extended), with shifts of at most 32:
// a shift by the full width leaves 0, or the sign for an arithmetic right shift.
struct ShlOp { template <typename C> static C F(C a, C s) { return C(uint64_t(a) << s); } };
struct ShrOp { template <typename C> static C F(C a, C s) { return a >> s; } };

template <typename T>
constexpr bool kBitwiseType = kIsOneOf<T, int16_t, uint16_t>;
template <typename T>
constexpr bool kShiftType = kIsOneOf<T, int16_t, uint16_t, int32_t, uint32_t>;

template <typename T>
void CheckBitwiseType(const char *call) { TWIN_CHECK_DTYPE(kBitwiseType<T>, call, "int16_t and uint16_t", T); }

template <typename T>
void CheckShift(const char *call, T shift)
{
    TWIN_CHECK_DTYPE(kShiftType<T>, call, "int16_t, uint16_t, int32_t and uint32_t", T);
    if constexpr (kShiftType<T>) {
        constexpr int64_t bits = 8 * sizeof(T);
        TWIN_CHECK(int64_t(shift) >= 0 && int64_t(shift) <= bits, call, "scalarValue (the shift) must be in [0, ", bits,
                   "] for ", TypeName<T>(), " (got ", int64_t(shift), ")");
    }
}

}  // namespace twin

namespace AscendC {

#define TWIN_BITWISE(Name, Op)                                                                                    \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,                 \
              const int32_t &count)                                                                               \
    {                                                                                                             \
        twin::CheckBitwiseType<T>(#Name);                                                                         \
        if constexpr (twin::kBitwiseType<T>) twin::BinaryIssue<twin::Op>(#Name, dst, src0, src1, twin::CountFormPlan(#Name, twin::Lanes<T>(), count, isSetMask), \
                                    BinaryRepeatParams(), false);                                                 \
        if (isSetMask) twin::RestoreDefaultMask();                                                                \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,  \
              const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)                                   \
    {                                                                                                             \
        twin::CheckBitwiseType<T>(#Name);                                                                         \
        uint64_t bits[2];                                                                                         \
        if (isSetMask) twin::ContinuousMaskBits(#Name, twin::Lanes<T>(), mask, bits);                             \
        if constexpr (twin::kBitwiseType<T>) twin::BinaryIssue<twin::Op>(#Name, dst, src0, src1,                                                       \
                                    twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, bits, isSetMask),       \
                                    repeatParams, false);                                                         \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask[], \
              const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)                                   \
    {                                                                                                             \
        twin::CheckBitwiseType<T>(#Name);                                                                         \
        if constexpr (twin::kBitwiseType<T>) twin::BinaryIssue<twin::Op>(#Name, dst, src0, src1,                                                       \
                                    twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, mask, isSetMask),       \
                                    repeatParams, false);                                                         \
    }
TWIN_BITWISE(And, AndOp)
TWIN_BITWISE(Or, OrOp)
#undef TWIN_BITWISE

#define TWIN_SHIFT(Name, Op)                                                                                      \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, const int32_t &count)  \
    {                                                                                                             \
        twin::CheckShift<T>(#Name, scalarValue);                                                                  \
        if constexpr (twin::kShiftType<T>) twin::ScalarIssue<twin::Op>(#Name, dst, src, scalarValue,                                  \
                                                   twin::CountFormPlan(#Name, twin::Lanes<T>(), count, isSetMask), \
                                                   UnaryRepeatParams());                                          \
        if (isSetMask) twin::RestoreDefaultMask();                                                                \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,         \
              const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)                                    \
    {                                                                                                             \
        twin::CheckShift<T>(#Name, scalarValue);                                                                  \
        uint64_t bits[2];                                                                                         \
        if (isSetMask) twin::ContinuousMaskBits(#Name, twin::Lanes<T>(), mask, bits);                             \
        if constexpr (twin::kShiftType<T>) twin::ScalarIssue<twin::Op>(#Name, dst, src, scalarValue,                                  \
                                                   twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, bits, isSetMask), \
                                                   repeatParams);                                                 \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],       \
              const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)                                    \
    {                                                                                                             \
        twin::CheckShift<T>(#Name, scalarValue);                                                                  \
        if constexpr (twin::kShiftType<T>) twin::ScalarIssue<twin::Op>(#Name, dst, src, scalarValue,                                  \
                                                   twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, mask, isSetMask), \
                                                   repeatParams);                                                 \
    }
TWIN_SHIFT(ShiftLeft, ShlOp)
TWIN_SHIFT(ShiftRight, ShrOp)
#undef TWIN_SHIFT

}  // namespace AscendC
