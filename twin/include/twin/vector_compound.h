// SPDX-License-Identifier: BSD-3-Clause
// Compound vector instructions: MulAddDst (dst = src0 * src1 + dst) and Axpy (dst = src * scalar + dst),
// each also with half sources into a float destination, AddRelu (max(src0 + src1, 0)) and LeakyRelu
// (src where src >= 0, else src * scalar). Each has the count form and the repeat forms of vector.h,
// with that header's placement, stride, overlap and mask rules; the A2 dtype table of each.
#pragma once
#include <cstring>

#include "vector.h"

namespace twin {

// dst = src0*src1 + dst and dst = src*scalar + dst: the product is rounded to T, then the sum (the
// A2 documentation of MulAddDst and Axpy promises no fused rounding). dst is read as well as written.
template <typename T>
void MulAddDstRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const T *a = reinterpret_cast<const T *>(ub + off[1]);
    const T *b = reinterpret_cast<const T *>(ub + off[2]);
    for (uint32_t i = 0; i < n; ++i) d[i] = Apply2<AddOp>(Apply2<MulOp>(a[i], b[i]), d[i]);
    AndShadow(sh + off[0], sh + off[0], sh + off[1], n * sizeof(T));
    AndShadow(sh + off[0], sh + off[0], sh + off[2], n * sizeof(T));
}

// A lane of a float destination is defined only where the half source lane it reads is.
inline void WidenShadow(uint8_t *dst_sh, const uint8_t *src_sh, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) {
        if (std::memchr(src_sh + i * sizeof(half), 0, sizeof(half)) != nullptr) {
            std::memset(dst_sh + i * sizeof(float), 0, sizeof(float));
        }
    }
}

// MulAddDst with half sources into a float destination computes in float: dst = float(src0) *
// float(src1) + dst (the product of two halves is exact in float, the sum rounded once).
inline void MulAddDstWideRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n)
{
    float *d = reinterpret_cast<float *>(ub + off[0]);
    const half *a = reinterpret_cast<const half *>(ub + off[1]);
    const half *b = reinterpret_cast<const half *>(ub + off[2]);
    for (uint32_t i = 0; i < n; ++i) d[i] = float(a[i]) * float(b[i]) + d[i];
    WidenShadow(sh + off[0], sh + off[1], n);
    WidenShadow(sh + off[0], sh + off[2], n);
}

// Half sources into a float destination must not overlap it at all (the documented constraint of A2's
// MulAddDst and Axpy: "no address overlap" for that type pair).
inline void CheckDisjoint(const char *call, const VecOperand &dst, const VecOperand &src, const LanePlan &p)
{
    uint64_t d0, d1, s0, s1;
    Footprint(dst, p, d0, d1);
    Footprint(src, p, s0, s1);
    TWIN_CHECK(d1 <= s0 || s1 <= d0, call, "the ", src.role, " operand (half) overlaps the ", dst.role,
               " operand (float): with half sources into a float destination no address overlap is allowed");
}

// Axpy with a half source into a float destination computes in float: dst = float(src) * scalar + dst.
template <typename T, typename U>
void AxpyRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n, U s)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const U *a = reinterpret_cast<const U *>(ub + off[1]);
    if constexpr (std::is_same_v<T, U>) {
        for (uint32_t i = 0; i < n; ++i) d[i] = Apply2<AddOp>(Apply2<MulOp>(a[i], s), d[i]);
        AndShadow(sh + off[0], sh + off[0], sh + off[1], n * sizeof(T));
    } else {
        for (uint32_t i = 0; i < n; ++i) d[i] = float(a[i]) * float(s) + d[i];
        WidenShadow(sh + off[0], sh + off[1], n);
    }
}

template <typename T, typename U>
void MulAddDst(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &src0,
               const AscendC::LocalTensor<U> &src1, const LanePlan &p, const AscendC::BinaryRepeatParams &rp)
{
    constexpr const char *call = "MulAddDst";
    dst.Check(call);
    src0.Check(call);
    src1.Check(call);
    constexpr bool wide = std::is_same_v<T, float> && std::is_same_v<U, half>;
    if constexpr (std::is_same_v<T, U>) {
        TWIN_CHECK_DTYPE(kFloatType<T>, call, "half and float", T);
    } else {
        TWIN_CHECK(wide, call, "A2 supports src/dst half/half, float/float and half/float for this instruction (got ",
                   TypeName<U>(), "/", TypeName<T>(), ")");
    }
    VecOperand ops[3];
    BinaryOperands(call, dst, src0, src1, rp, ops);
    if constexpr (wide) {
        CheckDisjoint(call, ops[0], ops[1], p);
        CheckDisjoint(call, ops[0], ops[2], p);
    }
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    if constexpr (wide) {
        ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { MulAddDstWideRun(core.ub.data(), core.shadow.data(), off, n); });
    } else if constexpr (std::is_same_v<T, U>) {
        ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { MulAddDstRun<T>(core.ub.data(), core.shadow.data(), off, n); });
    }
}

template <typename T, typename U>
void Axpy(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &src, U scalar, const LanePlan &p,
          const AscendC::UnaryRepeatParams &rp)
{
    constexpr const char *call = "Axpy";
    dst.Check(call);
    src.Check(call);
    constexpr bool same = std::is_same_v<T, U> && kFloatType<T>;
    TWIN_CHECK(same || (std::is_same_v<T, float> && std::is_same_v<U, half>), call,
               "A2 supports src/dst half/half, float/float and half/float for this instruction (got ",
               TypeName<U>(), "/", TypeName<T>(), ")");
    VecOperand ops[2];
    UnaryOperands(call, dst, src, rp, ops);
    if constexpr (!std::is_same_v<T, U>) {
        CheckDisjoint(call, ops[0], ops[1], p);
    }
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    if constexpr (same || (std::is_same_v<T, float> && std::is_same_v<U, half>)) {
        ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { AxpyRun<T, U>(core.ub.data(), core.shadow.data(), off, n, scalar); });
    }
}

}  // namespace twin

namespace AscendC {

// dst = src0 * src1 + dst; T is the destination type, U the sources' (A2: half/half, float/float, half
// sources into a float destination, 64 lanes a repeat).
template <typename T, typename U>
void MulAddDst(const LocalTensor<T> &dst, const LocalTensor<U> &src0, const LocalTensor<U> &src1, const int32_t &count)
{
    // A repeat reads 64 half lanes (4 blocks) of half sources into a float destination.
    constexpr uint8_t srcRep = uint8_t(8 * sizeof(U) / sizeof(T));
    twin::MulAddDst(dst, src0, src1, twin::CountFormPlan("MulAddDst", twin::Lanes<T>(), count, true),
                    BinaryRepeatParams(1, 1, 1, 8, srcRep, srcRep));
    twin::RestoreDefaultMask();
}
template <typename T, typename U, bool isSetMask = true>
void MulAddDst(const LocalTensor<T> &dst, const LocalTensor<U> &src0, const LocalTensor<U> &src1, uint64_t mask,
               int64_t repeatTime, const BinaryRepeatParams &params)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("MulAddDst", twin::Lanes<T>(), mask, bits);
    twin::MulAddDst(dst, src0, src1, twin::RepeatPlan("MulAddDst", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                    params);
}
template <typename T, typename U, bool isSetMask = true>
void MulAddDst(const LocalTensor<T> &dst, const LocalTensor<U> &src0, const LocalTensor<U> &src1,
               const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &params)
{
    twin::MulAddDst(dst, src0, src1, twin::RepeatPlan("MulAddDst", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                    params);
}
// dst = src * scalarValue + dst; T is the destination type, U the source's (A2: half/half,
// float/float, half source into a float destination, 64 lanes a repeat).
template <typename T, typename U>
void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, const int32_t &count)
{
    // A repeat reads 64 half lanes (4 blocks) of a half source into a float destination.
    twin::Axpy(dst, src, scalarValue, twin::CountFormPlan("Axpy", twin::Lanes<T>(), count, true),
               UnaryRepeatParams(1, 1, 8, uint32_t(8 * sizeof(U) / sizeof(T))));
    twin::RestoreDefaultMask();
}
template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, uint64_t mask,
          const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Axpy", twin::Lanes<T>(), mask, bits);
    twin::Axpy(dst, src, scalarValue, twin::RepeatPlan("Axpy", twin::Lanes<T>(), repeatTime, bits, isSetMask),
               repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, uint64_t mask[],
          const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    twin::Axpy(dst, src, scalarValue, twin::RepeatPlan("Axpy", twin::Lanes<T>(), repeatTime, mask, isSetMask),
               repeatParams);
}

}  // namespace AscendC


// ---- AddRelu and LeakyRelu ----

namespace twin {

struct AddReluOp {
    template <typename C>
    static C F(C a, C b)
    {
        const C s = a + b;
        return s > C(0) ? s : (s != s ? s : C(0));
    }
};
struct LeakyReluOp {
    template <typename C>
    static C F(C a, C alpha) { return a >= C(0) ? a : a * alpha; }
};

template <typename T>
void CheckAddReluType(const char *call) { TWIN_CHECK_DTYPE((kIsOneOf<T, half, float, int16_t>), call, "half, float and int16_t", T); }
template <typename T>
void CheckLeakyReluType(const char *call) { TWIN_CHECK_DTYPE(kFloatType<T>, call, "half and float", T); }

}  // namespace twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void AddRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, const int32_t &count)
{
    twin::CheckAddReluType<T>("AddRelu");
    twin::BinaryIssue<twin::AddReluOp>("AddRelu", dst, src0, src1,
                                       twin::CountFormPlan("AddRelu", twin::Lanes<T>(), count, isSetMask),
                                       BinaryRepeatParams(), false);
    if (isSetMask) twin::RestoreDefaultMask();
}
template <typename T, bool isSetMask = true>
void AddRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,
             const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)
{
    twin::CheckAddReluType<T>("AddRelu");
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("AddRelu", twin::Lanes<T>(), mask, bits);
    twin::BinaryIssue<twin::AddReluOp>("AddRelu", dst, src0, src1,
                                       twin::RepeatPlan("AddRelu", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                                       repeatParams, false);
}
template <typename T, bool isSetMask = true>
void AddRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask[],
             const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)
{
    twin::CheckAddReluType<T>("AddRelu");
    twin::BinaryIssue<twin::AddReluOp>("AddRelu", dst, src0, src1,
                                       twin::RepeatPlan("AddRelu", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                                       repeatParams, false);
}

template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, const int32_t &count)
{
    twin::CheckLeakyReluType<T>("LeakyRelu");
    twin::ScalarIssue<twin::LeakyReluOp>("LeakyRelu", dst, src, scalarValue,
                                         twin::CountFormPlan("LeakyRelu", twin::Lanes<T>(), count, isSetMask),
                                         UnaryRepeatParams());
    if (isSetMask) twin::RestoreDefaultMask();
}
template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,
               const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    twin::CheckLeakyReluType<T>("LeakyRelu");
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("LeakyRelu", twin::Lanes<T>(), mask, bits);
    twin::ScalarIssue<twin::LeakyReluOp>("LeakyRelu", dst, src, scalarValue,
                                         twin::RepeatPlan("LeakyRelu", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                                         repeatParams);
}
template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],
               const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    twin::CheckLeakyReluType<T>("LeakyRelu");
    twin::ScalarIssue<twin::LeakyReluOp>("LeakyRelu", dst, src, scalarValue,
                                         twin::RepeatPlan("LeakyRelu", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                                         repeatParams);
}

}  // namespace AscendC
