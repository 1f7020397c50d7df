// SPDX-License-Identifier: BSD-3-Clause
// Compare and select: Compare / Compares (element-wise comparison into a bit mask, one bit per
// element, element i in bit i % 8 of byte i / 8), Compare into the CmpMask register with GetCmpMask /
// SetCmpMask, and Select (per element, src0 where the mask bit is 1, else src1 or a scalar).
// A2 types: T = half or float (int32_t for CMPMODE::EQ only), the mask bytes uint8_t / int8_t
// (Select: uint8_t .. uint64_t). Comparisons follow IEEE: with a NaN only NE is true.
// Rules: operands 32-byte aligned, a count form's count x sizeof(T) a multiple of 256 bytes for
// Compare / Compares (the hardware skips a partial last repeat), every operand large enough for
// what the call reads or writes, the CmpMask register written before it is read.
#pragma once
#include <cstdint>
#include <cstring>

#include "vector.h"

namespace AscendC {

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

}  // namespace AscendC

namespace twin {

inline const char *CmpModeName(AscendC::CMPMODE m)
{
    static const char *const names[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
    return names[int(m)];
}

template <typename T>
bool CompareValues(T a, T b, AscendC::CMPMODE mode)
{
    const auto x = std::is_integral_v<T> ? double(a) : double(float(a));
    const auto y = std::is_integral_v<T> ? double(b) : double(float(b));
    switch (mode) {
    case AscendC::CMPMODE::LT: return x < y;
    case AscendC::CMPMODE::GT: return x > y;
    case AscendC::CMPMODE::EQ: return x == y;
    case AscendC::CMPMODE::LE: return x <= y;
    case AscendC::CMPMODE::GE: return x >= y;
    case AscendC::CMPMODE::NE: return !(x == y);
    }
    return false;
}

template <typename T, typename U>
void CheckCompareTypes(const char *call, AscendC::CMPMODE mode)
{
    static_assert(kIsOneOf<U, uint8_t, int8_t>, "Compare writes its bit mask as uint8_t or int8_t");
    TWIN_CHECK_DTYPE((kIsOneOf<T, half, float, int32_t>), call, "half, float (every CMPMODE) and int32_t (EQ only)", T);
    TWIN_CHECK((!std::is_same_v<T, int32_t> || mode == AscendC::CMPMODE::EQ), call,
               "A2 compares int32_t only with CMPMODE::EQ (got ", CmpModeName(mode), ")");
}

// Operand rules shared by the count forms: aligned start, `bytes` inside the view's buffer.
template <typename T>
void CheckSpan(const char *call, const char *role, const AscendC::LocalTensor<T> &t, uint64_t bytes, uint32_t align = 32)
{
    t.Check(call);
    TWIN_CHECK(t.ByteOffset() % align == 0, call, "the ", role, " operand must start ", align,
               "-byte aligned in UB (byte offset ", t.ByteOffset(), ")");
    TWIN_CHECK(bytes <= t.BytesToBufferEnd() && bytes <= uint64_t(t.GetSize()) * sizeof(T), call, "the ", role,
               " operand must hold what the call touches (", bytes, " bytes, the tensor has ",
               std::min<uint64_t>(t.BytesToBufferEnd(), uint64_t(t.GetSize()) * sizeof(T)), ")");
}

inline void CheckCompareCount(const char *call, uint64_t bytes)
{
    TWIN_CHECK(bytes % kRepeatBytes == 0, call, "count x sizeof(T) must be a multiple of 256 bytes: the hardware "
               "compares whole repeats and skips a partial last one (", bytes, " bytes)");
}

// dst bit i = cmp(src0[i], b(i)) for i < n; a result byte is defined iff its 8 lanes are.
template <typename T, typename U, typename B>
void CompareRun(const AscendC::LocalTensor<U> &dst, const AscendC::LocalTensor<T> &src0, uint32_t n,
                AscendC::CMPMODE mode, B &&b, const uint8_t *b_shadow)
{
    CoreState &core = Core();
    const T *a = src0.Data();
    const uint8_t *as = src0.Shadow();
    uint8_t *d = reinterpret_cast<uint8_t *>(dst.Data());
    uint8_t *ds = dst.Shadow();
    for (uint32_t byte = 0; byte < n / 8; ++byte) {
        uint8_t bits = 0;
        bool defined = true;
        for (uint32_t k = 0; k < 8; ++k) {
            const uint32_t i = byte * 8 + k;
            bits |= uint8_t(CompareValues<T>(a[i], b(i), mode)) << k;
            defined = defined && core.AllDefined(uint32_t(as - core.shadow.data()) + i * sizeof(T), sizeof(T)) &&
                      (b_shadow == nullptr || std::memchr(b_shadow + i * sizeof(T), 0, sizeof(T)) == nullptr);
        }
        d[byte] = bits;
        ds[byte] = defined ? 1 : 0;
    }
}

}  // namespace twin

namespace AscendC {

template <typename T, typename U>
void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
             uint32_t count)
{
    const char *call = "Compare";
    twin::CheckCompareTypes<T, U>(call, cmpMode);
    twin::CheckCompareCount(call, uint64_t(count) * sizeof(T));
    twin::CheckSpan(call, "src0", src0, uint64_t(count) * sizeof(T));
    twin::CheckSpan(call, "src1", src1, uint64_t(count) * sizeof(T));
    twin::CheckSpan(call, "dst", dst, count / 8);
    if (count == 0) return;
    twin::PipeAccess(call, src0.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, src1.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    twin::OnVector(uint64_t(count) * sizeof(T) / twin::kRepeatBytes, count);
    const T *b = src1.Data();
    twin::CompareRun(dst, src0, count, cmpMode, [&](uint32_t i) { return b[i]; }, src1.Shadow());
}

template <typename T, typename U>
void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
              uint32_t count)
{
    const char *call = "Compares";
    twin::CheckCompareTypes<T, U>(call, cmpMode);
    twin::CheckCompareCount(call, uint64_t(count) * sizeof(T));
    twin::CheckSpan(call, "src0", src0, uint64_t(count) * sizeof(T));
    twin::CheckSpan(call, "dst", dst, count / 8);
    if (count == 0) return;
    twin::PipeAccess(call, src0.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    twin::OnVector(uint64_t(count) * sizeof(T) / twin::kRepeatBytes, count);
    twin::CompareRun(dst, src0, count, cmpMode, [&](uint32_t) { return src1Scalar; }, nullptr);
}

// One repeat (256 bytes of each source, blocks and repeats as repeatParams say) compared into the
// CmpMask register: bit i for lane i where the mask enables it, 0 elsewhere.
template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask[],
             const BinaryRepeatParams &repeatParams)
{
    const char *call = "Compare";
    twin::CheckCompareTypes<T, uint8_t>(call, cmpMode);
    src0.Check(call);
    src1.Check(call);
    const twin::LanePlan plan = twin::RepeatPlan(call, twin::Lanes<T>(), 1, mask, isSetMask);
    twin::CheckStride(call, "src0BlkStride", repeatParams.src0BlkStride, 8);
    twin::CheckStride(call, "src1BlkStride", repeatParams.src1BlkStride, 8);
    const twin::VecOperand a = twin::Operand("src0", src0, repeatParams.src0BlkStride, repeatParams.src0RepStride);
    const twin::VecOperand b = twin::Operand("src1", src1, repeatParams.src1BlkStride, repeatParams.src1RepStride);
    twin::CheckPlacement(call, a, plan);
    twin::CheckPlacement(call, b, plan);
    twin::CoreState &core = twin::Core();
    twin::PipeAccess(call, src0.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, src1.Slot(), twin::Pipe::V, false);
    twin::OnVector(1, plan.ActiveLanes(), plan.lanes);
    uint64_t on[2];
    plan.RepeatMask(0, on);
    core.cmp_mask[0] = core.cmp_mask[1] = 0;
    bool defined = true;
    for (uint32_t l = 0; l < plan.lanes; ++l) {
        if (!((on[l / 64] >> (l % 64)) & 1)) continue;
        const uint64_t ia = a.LaneByte(0, l), ib = b.LaneByte(0, l);
        T x, y;
        std::memcpy(&x, core.ub.data() + ia, sizeof(T));
        std::memcpy(&y, core.ub.data() + ib, sizeof(T));
        defined = defined && core.AllDefined(uint32_t(ia), sizeof(T)) && core.AllDefined(uint32_t(ib), sizeof(T));
        core.cmp_mask[l / 64] |= uint64_t(twin::CompareValues<T>(x, y, cmpMode)) << (l % 64);
    }
    core.cmp_mask_defined = defined;
}

template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask,
             const BinaryRepeatParams &repeatParams)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Compare", twin::Lanes<T>(), mask, bits);
    Compare<T, isSetMask>(src0, src1, cmpMode, bits, repeatParams);
}

// The 128 bits of the CmpMask register into dst's first 16 bytes.
template <typename T>
void GetCmpMask(const LocalTensor<T> &dst)
{
    const char *call = "GetCmpMask";
    twin::CheckSpan(call, "dst", dst, 16, 16);
    twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.cmp_mask_defined, call, "the CmpMask register holds nothing defined: a Compare without a "
               "destination or SetCmpMask must write it first");
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    std::memcpy(dst.Data(), core.cmp_mask, 16);
    core.MarkDefined(dst.ByteOffset(), 16);
}

template <typename T>
void SetCmpMask(const LocalTensor<T> &src)
{
    const char *call = "SetCmpMask";
    twin::CheckSpan(call, "src", src, 16, 16);
    twin::CoreState &core = twin::Core();
    twin::PipeAccess(call, src.Slot(), twin::Pipe::V, false);
    std::memcpy(core.cmp_mask, src.Data(), 16);
    core.cmp_mask_defined = core.AllDefined(src.ByteOffset(), 16);
}

}  // namespace AscendC

namespace twin {

template <typename T, typename U>
void CheckSelectTypes(const char *call)
{
    static_assert(kIsOneOf<U, uint8_t, uint16_t, uint32_t, uint64_t>, "Select's mask is uint8_t .. uint64_t");
    TWIN_CHECK_DTYPE((kFloatType<T>), call, "half and float", T);
}

// dst[i] = bit(i) ? src0[i] : other(i) for i < n. Mode VSEL_CMPMASK_SPR takes the bits of the first
// 256 / sizeof(T) lanes again in every repeat (from selMask, via the CmpMask register); the other
// modes consume the mask bits one per element.
template <typename T, typename U, typename Other>
void SelectRun(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &selMask,
               const AscendC::LocalTensor<T> &src0, AscendC::SELMODE mode, uint32_t n, Other &&other,
               const uint8_t *other_shadow)
{
    const uint32_t lanes = Lanes<T>();
    const uint64_t bits = mode == AscendC::SELMODE::VSEL_CMPMASK_SPR ? std::min(n, lanes) : n;
    CheckSpan(call, "selMask", selMask, (bits + 7) / 8);
    CheckSpan(call, "src0", src0, uint64_t(n) * sizeof(T));
    CheckSpan(call, "dst", dst, uint64_t(n) * sizeof(T));
    if (n == 0) return;
    PipeAccess(call, selMask.Slot(), Pipe::V, false);
    PipeAccess(call, src0.Slot(), Pipe::V, false);
    PipeAccess(call, dst.Slot(), Pipe::V, true);
    OnVector((n + lanes - 1) / lanes, n);
    const uint8_t *m = reinterpret_cast<const uint8_t *>(selMask.Data());
    const uint8_t *ms = selMask.Shadow();
    const T *a = src0.Data();
    const uint8_t *as = src0.Shadow();
    T *d = dst.Data();
    uint8_t *ds = dst.Shadow();
    std::vector<T> out(n);
    std::vector<uint8_t> out_shadow(uint64_t(n) * sizeof(T));
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t bit = mode == AscendC::SELMODE::VSEL_CMPMASK_SPR ? i % lanes : i;
        const bool pick0 = (m[bit / 8] >> (bit % 8)) & 1;
        out[i] = pick0 ? a[i] : other(i);
        const uint8_t *chosen = pick0 ? as + uint64_t(i) * sizeof(T) : other_shadow ? other_shadow + uint64_t(i) * sizeof(T) : nullptr;
        const bool defined = ms[bit / 8] && (chosen == nullptr || std::memchr(chosen, 0, sizeof(T)) == nullptr);
        std::memset(out_shadow.data() + uint64_t(i) * sizeof(T), defined ? 1 : 0, sizeof(T));
    }
    std::memcpy(d, out.data(), uint64_t(n) * sizeof(T));
    std::memcpy(ds, out_shadow.data(), out_shadow.size());
}

}  // namespace twin

namespace AscendC {

template <typename T, typename U>
void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
            const LocalTensor<T> &src1, SELMODE selMode, uint32_t count)
{
    const char *call = "Select";
    twin::CheckSelectTypes<T, U>(call);
    TWIN_CHECK(selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE, call,
               "VSEL_TENSOR_SCALAR_MODE selects between a tensor and a scalar: pass src1 as a T value");
    twin::CheckSpan(call, "src1", src1, uint64_t(count) * sizeof(T));
    if (count != 0) twin::PipeAccess(call, src1.Slot(), twin::Pipe::V, false);
    const T *b = src1.Data();
    twin::SelectRun(call, dst, selMask, src0, selMode, count, [&](uint32_t i) { return b[i]; }, src1.Shadow());
}

template <typename T, typename U>
void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
            SELMODE selMode, uint32_t count)
{
    const char *call = "Select";
    twin::CheckSelectTypes<T, U>(call);
    TWIN_CHECK(selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE, call,
               "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    twin::SelectRun(call, dst, selMask, src0, selMode, count, [&](uint32_t) { return src1; }, nullptr);
}

}  // namespace AscendC
