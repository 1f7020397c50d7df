// SPDX-License-Identifier: BSD-3-Clause
// Vector compute of the twin: the mask registers, element-wise binary (Add/Sub/Mul/Div/Max/Min),
// tensor-scalar (Adds/Muls/Maxs/Mins) and unary (Exp/Ln/Sqrt/Abs/Reciprocal) instructions;
// Duplicate and Brcb (vector_fill.h), the compound ones (vector_compound.h), the bitwise ones
// (vector_logic.h). Each has the documented count form ("first n elements") and repeat form
// (mask as a lane count or a 2 x 64-bit mask, repeatTime, block/repeat strides; isSetMask = false
// uses the core's mask registers). Rules: the A2 dtype table of each instruction, operand start
// 32-byte aligned, repeatTime <= 255, strides within their bit widths, every operand's footprint
// inside its buffer, the address-overlap rules, no use after FreeTensor (see vector_engine.h).
// Definedness: a destination lane is defined iff its source lanes are; masked-off lanes keep
// their value and definedness.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "vector_engine.h"

namespace AscendC {

struct BinaryRepeatParams {
    BinaryRepeatParams() = default;
    // Wider than the real constructors' uint8_t parameters on purpose (both accept the same calls; g++
    // only warns about a braced narrowing): an out-of-range stride is reported, not truncated.
    BinaryRepeatParams(uint32_t dstBlk, uint32_t src0Blk, uint32_t src1Blk, uint32_t dstRep, uint32_t src0Rep,
                       uint32_t src1Rep)
        : dstBlkStride(dstBlk), src0BlkStride(src0Blk), src1BlkStride(src1Blk), dstRepStride(dstRep),
          src0RepStride(src0Rep), src1RepStride(src1Rep)
    {
    }
    // Wider than the hardware fields on purpose, for the same reason.
    uint32_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint32_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() = default;
    UnaryRepeatParams(uint32_t dstBlk, uint32_t srcBlk, uint32_t dstRep, uint32_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep)
    {
    }
    uint32_t dstBlkStride = 1, srcBlkStride = 1;
    uint32_t dstRepStride = 8, srcRepStride = 8;
};

struct BrcbRepeatParams {
    BrcbRepeatParams() = default;
    BrcbRepeatParams(uint32_t dstBlk, uint32_t dstRep) : dstBlkStride(dstBlk), dstRepStride(dstRep) {}
    uint32_t dstBlkStride = 1, dstRepStride = 8;
};

inline void SetMaskNorm() { twin::Core().mask_count_mode = false; }
inline void SetMaskCount() { twin::Core().mask_count_mode = true; }
inline void ResetMask()
{
    twin::CoreState &core = twin::Core();
    core.mask[0] = core.mask[1] = ~0ull;
}

}  // namespace AscendC

namespace twin {

// The mask register as A2 writes it: the same two words in either mode, read as lane bits in Normal
// mode and as the element count (maskLow) in Counter mode, where maskHigh has no effect (documented:
// "set it to 0, it does not take effect"), so a nonzero one is not refused.
inline void WriteMaskRegister(const char *call, uint64_t maskHigh, uint64_t maskLow)
{
    (void)call;
    CoreState &core = Core();
    core.mask[0] = maskLow;
    core.mask[1] = maskHigh;
}

}  // namespace twin

namespace AscendC {

// The (maskHigh, maskLow) form writes the register whatever `mode` says: asc-devkit's A2 code passes
// both words to the hardware and ignores the template, so SetMaskCount() then SetVectorMask<T>(0, n)
// counts n elements (its reduce sample relies on it). The core's mode decides how they are read.
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(uint64_t maskHigh, uint64_t maskLow)
{
    twin::WriteMaskRegister("SetVectorMask", maskHigh, maskLow);
}

template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(int32_t len)
{
    twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.mask_count_mode == (mode == MaskMode::COUNTER), "SetVectorMask",
               "the mask mode must be set first with SetMaskCount / SetMaskNorm (the core is in ",
               core.mask_count_mode ? "Counter" : "Normal", " mode)");
    TWIN_CHECK(len >= 0, "SetVectorMask", "len must not be negative (got ", len, ")");
    if (mode == MaskMode::COUNTER) {
        core.mask[0] = uint64_t(len);
        core.mask[1] = 0;
        return;
    }
    twin::ContinuousMaskBits("SetVectorMask", twin::kRepeatBytes / sizeof(T), uint64_t(len), core.mask);
}

}  // namespace AscendC

namespace twin {

// ---- element operations: C is the computing type (float for half, wide integers for ints) ----
struct AddOp { template <typename C> static C F(C a, C b) { return a + b; } };
struct SubOp { template <typename C> static C F(C a, C b) { return a - b; } };
struct MulOp { template <typename C> static C F(C a, C b) { return a * b; } };
struct DivOp { template <typename C> static C F(C a, C b) { return a / b; } };
// NaN in either operand gives NaN, so a NaN cannot be hidden by a max/min. (Which zero max(+0, -0)
// returns is not documented; the twin returns the first operand, as NumPy does.)
struct MaxOp { template <typename C> static C F(C a, C b) { return (a != a || a >= b) ? a : b; } };
struct MinOp { template <typename C> static C F(C a, C b) { return (a != a || a <= b) ? a : b; } };
struct ExpOp { static float F(float a) { return std::exp(a); } };
struct LnOp { static float F(float a) { return std::log(a); } };
struct SqrtOp { static float F(float a) { return std::sqrt(a); } };
struct AbsOp { static float F(float a) { return std::fabs(a); } };
struct RecOp { static float F(float a) { return 1.0f / a; } };

// a op b for one element of T, rounded once to T (integers wrap as the hardware does).
template <typename Op, typename T>
inline T Apply2(T a, T b)
{
    if constexpr (std::is_same_v<T, float>) return Op::F(a, b);
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(Op::F(int64_t(a), int64_t(b)));
    else return T(Op::F(float(a), float(b)));
}

template <typename Op, typename T>
void BinaryRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const T *a = reinterpret_cast<const T *>(ub + off[1]);
    const T *b = reinterpret_cast<const T *>(ub + off[2]);
    if constexpr (std::is_arithmetic_v<T>) {
        MapBlocks<8>(d, n, [&](size_t i) { return Apply2<Op>(a[i], b[i]); });
    } else {
        for (uint32_t i = 0; i < n; ++i) d[i] = Apply2<Op>(a[i], b[i]);
    }
    AndShadow(sh + off[0], sh + off[1], sh + off[2], n * sizeof(T));
}

template <typename Op, typename T>
void ScalarRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n, T s)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const T *a = reinterpret_cast<const T *>(ub + off[1]);
    if constexpr (std::is_arithmetic_v<T>) {
        MapBlocks<8>(d, n, [&](size_t i) { return Apply2<Op>(a[i], s); });
    } else {
        for (uint32_t i = 0; i < n; ++i) d[i] = Apply2<Op>(a[i], s);
    }
    if (off[0] != off[1]) std::memcpy(sh + off[0], sh + off[1], n * sizeof(T));
}

template <typename Op, typename T>
void UnaryRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const T *a = reinterpret_cast<const T *>(ub + off[1]);
    for (uint32_t i = 0; i < n; ++i) d[i] = T(Op::F(float(a[i])));
    if (off[0] != off[1]) std::memcpy(sh + off[0], sh + off[1], n * sizeof(T));
}

template <typename T>
constexpr uint32_t Lanes() { return kRepeatBytes / sizeof(T); }

template <typename T>
constexpr bool kArithType = kIsOneOf<T, half, float, int16_t, int32_t>;
template <typename T>
constexpr bool kFloatType = kIsOneOf<T, half, float>;

#define TWIN_CHECK_DTYPE(ok, call, allowed, T)                                                           \
    TWIN_CHECK(ok, call, "A2 supports " allowed " for this instruction (got ", ::twin::TypeName<T>(), \
               "; bfloat16_t has no vector arithmetic on A2: Cast it to float first)")
// Where CANN's headers reject an element type at compile time (a static_assert of their own: the
// repeat forms of the element-wise ops, every form of the tensor-scalar ops and Duplicate), the twin
// does too, so such a kernel fails to build here as it does there; their count forms of the binary
// and unary ops check at run time, as CANN's CPU-debug checks do.
#define TWIN_REQUIRE_DTYPE(ok, allowed)                                                                     \
    static_assert(ok, "A2 supports " allowed " for this instruction (bfloat16_t has no vector arithmetic " \
                      "on A2: Cast it to float first)")
#define TWIN_REQUIRE_BINARY_DTYPE(Op, T)                                                                      \
    TWIN_REQUIRE_DTYPE((!std::is_same_v<Op, ::twin::DivOp> || ::twin::kFloatType<T>), "half and float");      \
    TWIN_REQUIRE_DTYPE((std::is_same_v<Op, ::twin::DivOp> || ::twin::kArithType<T>),                          \
                       "half, float, int16_t and int32_t")

// Plan of the count form: the count (isSetMask = true) or the core's mask registers.
inline LanePlan CountFormPlan(const char *call, uint32_t lanes, int64_t count, bool is_set_mask)
{
    if (!is_set_mask) {
        return RepeatPlan(call, lanes, 1, nullptr, false);
    }
    TWIN_CHECK(count >= 0, call, "count must not be negative (got ", count, ")");
    return CountPlan(lanes, uint64_t(count));
}

// The rules of a BinaryRepeatParams (all strides 8 bits, no dst block stride 0) and the three
// operands it addresses: {dst, src0, src1}.
template <typename T, typename U>
void BinaryOperands(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &src0,
                    const AscendC::LocalTensor<U> &src1, const AscendC::BinaryRepeatParams &rp, VecOperand (&ops)[3])
{
    CheckStride(call, "dstBlkStride", rp.dstBlkStride, 8);
    CheckStride(call, "src0BlkStride", rp.src0BlkStride, 8);
    CheckStride(call, "src1BlkStride", rp.src1BlkStride, 8);
    CheckStride(call, "dstRepStride", rp.dstRepStride, 8);
    CheckStride(call, "src0RepStride", rp.src0RepStride, 8);
    CheckStride(call, "src1RepStride", rp.src1RepStride, 8);
    TWIN_CHECK(rp.dstBlkStride != 0, call, "dstBlkStride must not be 0 (undefined behaviour on the hardware)");
    ops[0] = Operand("dst", dst, rp.dstBlkStride, rp.dstRepStride);
    ops[1] = Operand("src0", src0, rp.src0BlkStride, rp.src0RepStride);
    ops[2] = Operand("src1", src1, rp.src1BlkStride, rp.src1RepStride);
}

// The element-wise binary instruction once its dtype passed; accumulates: dst on src1 with a zero
// repeat stride is allowed (the documented accumulation).
template <typename Op, typename T>
void BinaryIssue(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src0,
                 const AscendC::LocalTensor<T> &src1, const LanePlan &p, const AscendC::BinaryRepeatParams &rp,
                 bool accumulates)
{
    dst.Check(call);
    src0.Check(call);
    src1.Check(call);
    VecOperand ops[3];
    BinaryOperands(call, dst, src0, src1, rp, ops);
    if (!Issue(call, ops, p, accumulates ? 2 : -1)) return;
    CoreState &core = Core();
    ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { BinaryRun<Op, T>(core.ub.data(), core.shadow.data(), off, n); });
}

template <typename Op, typename T>
void Binary(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src0,
            const AscendC::LocalTensor<T> &src1, const LanePlan &p, const AscendC::BinaryRepeatParams &rp)
{
    constexpr bool is_div = std::is_same_v<Op, DivOp>;
    if constexpr (is_div) {
        TWIN_CHECK_DTYPE(kFloatType<T>, call, "half and float", T);
    } else {
        TWIN_CHECK_DTYPE(kArithType<T>, call, "half, float, int16_t and int32_t", T);
    }
    // dst accumulating onto src1 across repeats is documented for these ops on half/int32/float.
    BinaryIssue<Op>(call, dst, src0, src1, p, rp, !is_div && kIsOneOf<T, half, float, int32_t>);
}

// The rules of a UnaryRepeatParams (block strides 16 bits, repeat strides 8 bits, no dst block
// stride 0) and the two operands it addresses: {dst, src}.
template <typename T, typename U>
void UnaryOperands(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &src,
                   const AscendC::UnaryRepeatParams &rp, VecOperand (&ops)[2])
{
    CheckStride(call, "dstBlkStride", rp.dstBlkStride, 16);
    CheckStride(call, "srcBlkStride", rp.srcBlkStride, 16);
    CheckStride(call, "dstRepStride", rp.dstRepStride, 8);
    CheckStride(call, "srcRepStride", rp.srcRepStride, 8);
    TWIN_CHECK(rp.dstBlkStride != 0, call, "dstBlkStride must not be 0 (undefined behaviour on the hardware)");
    ops[0] = Operand("dst", dst, rp.dstBlkStride, rp.dstRepStride);
    ops[1] = Operand("src", src, rp.srcBlkStride, rp.srcRepStride);
}

// The tensor-scalar instruction once its dtype passed.
template <typename Op, typename T>
void ScalarIssue(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, T scalar,
                 const LanePlan &p, const AscendC::UnaryRepeatParams &rp)
{
    dst.Check(call);
    src.Check(call);
    VecOperand ops[2];
    UnaryOperands(call, dst, src, rp, ops);
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { ScalarRun<Op, T>(core.ub.data(), core.shadow.data(), off, n, scalar); });
}

template <typename Op, typename T>
void Scalar(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, T scalar,
            const LanePlan &p, const AscendC::UnaryRepeatParams &rp)
{
    TWIN_REQUIRE_DTYPE(kArithType<T>, "half, float, int16_t and int32_t");
    ScalarIssue<Op>(call, dst, src, scalar, p, rp);
}

template <typename Op, typename T>
void Unary(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, const LanePlan &p,
           const AscendC::UnaryRepeatParams &rp)
{
    dst.Check(call);
    src.Check(call);
    TWIN_CHECK_DTYPE(kFloatType<T>, call, "half and float", T);
    VecOperand ops[2];
    UnaryOperands(call, dst, src, rp, ops);
    if (!Issue(call, ops, p)) return;
    CoreState &core = Core();
    if constexpr (kFloatType<T>) {
        ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { UnaryRun<Op, T>(core.ub.data(), core.shadow.data(), off, n); });
    }
}

}  // namespace twin

namespace AscendC {

// Count form, and the repeat form with a continuous or a bitwise mask, for each binary op.
#define TWIN_BINARY(Name, Op)                                                                                    \
    template <typename T>                                                                                        \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,                \
              const int32_t &count)                                                                              \
    {                                                                                                            \
        twin::Binary<twin::Op>(#Name, dst, src0, src1, twin::CountFormPlan(#Name, twin::Lanes<T>(), count, true), \
                               BinaryRepeatParams());                                                            \
        twin::RestoreDefaultMask();                                                                              \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask, \
              int64_t repeatTime, const BinaryRepeatParams &params)                                              \
    {                                                                                                            \
        TWIN_REQUIRE_BINARY_DTYPE(twin::Op, T);                                                                  \
        uint64_t bits[2];                                                                                        \
        if (isSetMask) twin::ContinuousMaskBits(#Name, twin::Lanes<T>(), mask, bits);                            \
        twin::Binary<twin::Op>(#Name, dst, src0, src1,                                                           \
                               twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, bits, isSetMask), params);  \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,                \
              uint64_t mask[], int64_t repeatTime, const BinaryRepeatParams &params)                             \
    {                                                                                                            \
        TWIN_REQUIRE_BINARY_DTYPE(twin::Op, T);                                                                  \
        twin::Binary<twin::Op>(#Name, dst, src0, src1,                                                           \
                               twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, mask, isSetMask), params);  \
    }
TWIN_BINARY(Add, AddOp)
TWIN_BINARY(Sub, SubOp)
TWIN_BINARY(Mul, MulOp)
TWIN_BINARY(Div, DivOp)
TWIN_BINARY(Max, MaxOp)
TWIN_BINARY(Min, MinOp)
#undef TWIN_BINARY

#define TWIN_SCALAR(Name, Op)                                                                                    \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, const int32_t &count) \
    {                                                                                                            \
        twin::Scalar<twin::Op>(#Name, dst, src, scalarValue,                                                     \
                               twin::CountFormPlan(#Name, twin::Lanes<T>(), count, isSetMask), UnaryRepeatParams()); \
        if (isSetMask) twin::RestoreDefaultMask();                                                               \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,        \
              int64_t repeatTime, const UnaryRepeatParams &params)                                               \
    {                                                                                                            \
        uint64_t bits[2];                                                                                        \
        if (isSetMask) twin::ContinuousMaskBits(#Name, twin::Lanes<T>(), mask, bits);                            \
        twin::Scalar<twin::Op>(#Name, dst, src, scalarValue,                                                     \
                               twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, bits, isSetMask), params);  \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],       \
              int64_t repeatTime, const UnaryRepeatParams &params)                                               \
    {                                                                                                            \
        twin::Scalar<twin::Op>(#Name, dst, src, scalarValue,                                                     \
                               twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, mask, isSetMask), params);  \
    }
TWIN_SCALAR(Adds, AddOp)
TWIN_SCALAR(Muls, MulOp)
TWIN_SCALAR(Maxs, MaxOp)
TWIN_SCALAR(Mins, MinOp)
#undef TWIN_SCALAR

#define TWIN_UNARY(Name, Op)                                                                                     \
    template <typename T>                                                                                        \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count)                       \
    {                                                                                                            \
        twin::Unary<twin::Op>(#Name, dst, src, twin::CountFormPlan(#Name, twin::Lanes<T>(), count, true),       \
                              UnaryRepeatParams());                                                              \
        twin::RestoreDefaultMask();                                                                              \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask, int64_t repeatTime,          \
              const UnaryRepeatParams &params)                                                                   \
    {                                                                                                            \
        TWIN_REQUIRE_DTYPE(twin::kFloatType<T>, "half and float");                                               \
        uint64_t bits[2];                                                                                        \
        if (isSetMask) twin::ContinuousMaskBits(#Name, twin::Lanes<T>(), mask, bits);                            \
        twin::Unary<twin::Op>(#Name, dst, src, twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, bits, isSetMask), \
                              params);                                                                           \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask[], int64_t repeatTime,        \
              const UnaryRepeatParams &params)                                                                   \
    {                                                                                                            \
        TWIN_REQUIRE_DTYPE(twin::kFloatType<T>, "half and float");                                               \
        twin::Unary<twin::Op>(#Name, dst, src, twin::RepeatPlan(#Name, twin::Lanes<T>(), repeatTime, mask, isSetMask), \
                              params);                                                                           \
    }
TWIN_UNARY(Exp, ExpOp)
TWIN_UNARY(Ln, LnOp)
TWIN_UNARY(Sqrt, SqrtOp)
TWIN_UNARY(Abs, AbsOp)
TWIN_UNARY(Reciprocal, RecOp)
#undef TWIN_UNARY

}  // namespace AscendC

#include "vector_fill.h"
#include "vector_compound.h"
#include "vector_logic.h"
