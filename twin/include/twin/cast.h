// SPDX-License-Identifier: BSD-3-Clause
// Cast of the twin: precision conversion between tensors of different element types, count form
// and repeat form (UnaryRepeatParams; lanes per repeat follow the wider type, as documented).
// The (source, destination, RoundMode) combinations are those of the A2 table in the public Cast
// documentation, restricted to the pairs a normalisation kernel needs:
//   half -> float, bfloat16_t -> float          CAST_NONE (exact)
//   float -> half      RINT FLOOR CEIL ROUND TRUNC ODD NONE (NONE rounds like RINT)
//   float -> bfloat16_t RINT FLOOR CEIL ROUND TRUNC (CAST_NONE is not allowed on A2)
//   float -> float, float -> int32_t, half -> int32_t   RINT FLOOR CEIL ROUND TRUNC
//   int32_t -> float   RINT FLOOR CEIL ROUND TRUNC NONE
// RINT = nearest, ties to even; ROUND = nearest, ties away from zero; ODD = round to odd (von
// Neumann). Conversions to int32_t saturate and take NaN to 0 (the documentation is silent: an
// assumption of the twin). Any other pair or mode is a rule error.
#pragma once
#include <array>
#include <cmath>
#include <limits>

#include "vector.h"

namespace AscendC {

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD, CAST_HYBRID };

}  // namespace AscendC

namespace twin {

using AscendC::RoundMode;

inline const char *RoundModeName(RoundMode m)
{
    static const char *const names[] = {"CAST_NONE",  "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                        "CAST_ROUND", "CAST_TRUNC", "CAST_ODD",   "CAST_HYBRID"};
    return static_cast<unsigned>(m) < 8 ? names[static_cast<unsigned>(m)] : "an unknown RoundMode";
}

inline Rounding ToRounding(RoundMode m)
{
    switch (m) {
    case RoundMode::CAST_FLOOR: return Rounding::Floor;
    case RoundMode::CAST_CEIL: return Rounding::Ceil;
    case RoundMode::CAST_ROUND: return Rounding::HalfAway;
    case RoundMode::CAST_TRUNC: return Rounding::Trunc;
    case RoundMode::CAST_ODD: return Rounding::Odd;
    default: return Rounding::NearestEven;
    }
}

// The RoundModes A2 allows for src U -> dst T, as a bit set (bit i = RoundMode i); 0: pair unsupported.
template <typename T, typename U>
constexpr unsigned AllowedModes()
{
    constexpr unsigned none = 1u << 0, directed = 0x3Eu /* RINT FLOOR CEIL ROUND TRUNC */, odd = 1u << 6;
    if constexpr (std::is_same_v<T, float> && kIsOneOf<U, half, bfloat16_t>) return none;
    else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>) return none | directed | odd;
    else if constexpr (std::is_same_v<U, float> && kIsOneOf<T, bfloat16_t, float, int32_t>) return directed;
    else if constexpr (std::is_same_v<U, half> && std::is_same_v<T, int32_t>) return directed;
    else if constexpr (std::is_same_v<U, int32_t> && std::is_same_v<T, float>) return none | directed;
    else return 0;
}

inline std::string ModeList(unsigned bits)
{
    std::string out;
    for (unsigned i = 0; i < 8; ++i) {
        if (bits & (1u << i)) out += (out.empty() ? "" : ", ") + std::string(RoundModeName(RoundMode(i)));
    }
    return out;
}

// half -> float through a table of all 65536 patterns: exact and cheap on the hot path.
inline const float *HalfToFloatTable()
{
    static const std::array<float, 65536> table = [] {
        std::array<float, 65536> t{};
        for (uint32_t i = 0; i < 65536; ++i) t[i] = HalfBitsToFloat(static_cast<uint16_t>(i));
        return t;
    }();
    return table.data();
}

// Rounds a float to an integral float value.
inline float RoundIntegral(float x, Rounding r)
{
    switch (r) {
    case Rounding::Floor: return std::floor(x);
    case Rounding::Ceil: return std::ceil(x);
    case Rounding::HalfAway: return std::round(x);
    case Rounding::Trunc: return std::trunc(x);
    default: return std::nearbyint(x);  // the default FP environment rounds to nearest even
    }
}

inline int32_t FloatToInt32(float x, Rounding r)
{
    if (x != x) return 0;
    const float v = RoundIntegral(x, r);
    if (v >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
    if (v < -2147483648.0f) return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(v);
}

// int32 -> float with a directed mode: pick between the two floats around the exact value.
inline float Int32ToFloat(int32_t i, Rounding r)
{
    const float nearest = static_cast<float>(i);  // round to nearest even
    const double exact = i;
    if (double(nearest) == exact || r == Rounding::NearestEven) return nearest;
    const float lo = double(nearest) < exact ? nearest : std::nextafter(nearest, -INFINITY);
    const float hi = double(nearest) > exact ? nearest : std::nextafter(nearest, INFINITY);
    switch (r) {
    case Rounding::Floor: return lo;
    case Rounding::Ceil: return hi;
    case Rounding::Trunc: return i < 0 ? hi : lo;
    default:  // HalfAway: the nearer one, ties away from zero
        if (exact - lo == hi - exact) return i < 0 ? lo : hi;
        return exact - lo < hi - exact ? lo : hi;
    }
}

template <typename T, typename U>
void CastRun(uint8_t *ub, uint8_t *sh, const uint32_t *off, uint32_t n, Rounding r)
{
    T *d = reinterpret_cast<T *>(ub + off[0]);
    const U *s = reinterpret_cast<const U *>(ub + off[1]);
    if constexpr (std::is_same_v<T, float> && std::is_same_v<U, half>) {
        const float *table = HalfToFloatTable();
        for (uint32_t i = 0; i < n; ++i) d[i] = table[s[i].bits];
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, bfloat16_t>) {
        for (uint32_t i = 0; i < n; ++i) d[i] = BitsFloat(uint32_t(s[i].bits) << 16);
    } else if constexpr (std::is_same_v<T, half>) {
        if (r == Rounding::NearestEven) {
            for (uint32_t i = 0; i < n; ++i) d[i].bits = FloatToHalfRne(s[i]);
        } else {
            for (uint32_t i = 0; i < n; ++i) d[i].bits = RoundToHalf(s[i], r);
        }
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        if (r == Rounding::NearestEven) {
            for (uint32_t i = 0; i < n; ++i) d[i].bits = FloatToBf16Rne(s[i]);
        } else {
            for (uint32_t i = 0; i < n; ++i) d[i].bits = RoundToBf16(s[i], r);
        }
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
        for (uint32_t i = 0; i < n; ++i) d[i] = RoundIntegral(s[i], r);
    } else if constexpr (std::is_same_v<T, int32_t> && kIsOneOf<U, float, half>) {
        for (uint32_t i = 0; i < n; ++i) d[i] = FloatToInt32(float(s[i]), r);
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, int32_t>) {
        for (uint32_t i = 0; i < n; ++i) d[i] = Int32ToFloat(s[i], r);
    }
    // A destination lane is defined iff every byte of its source lane is.
    uint8_t *ds = sh + off[0];
    const uint8_t *ss = sh + off[1];
    if constexpr (sizeof(T) == sizeof(U)) {
        if (ds != ss) std::memcpy(ds, ss, n * sizeof(T));
    } else {
        for (uint32_t i = 0; i < n; ++i) {
            uint8_t v = 1;
            for (uint32_t k = 0; k < sizeof(U); ++k) v &= ss[i * sizeof(U) + k];
            for (uint32_t k = 0; k < sizeof(T); ++k) ds[i * sizeof(T) + k] = v;
        }
    }
}

template <typename T, typename U>
void CastImpl(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &src, RoundMode mode,
              const LanePlan &p, const AscendC::UnaryRepeatParams &rp)
{
    const char *call = "Cast";
    dst.Check(call);
    src.Check(call);
    constexpr unsigned allowed = AllowedModes<T, U>();
    static_assert(!(std::is_same_v<T, bfloat16_t> && std::is_same_v<U, half>) &&
                      !(std::is_same_v<T, half> && std::is_same_v<U, bfloat16_t>),
                  "Cast: A2 has no conversion between half and bfloat16_t (the real headers reject it too; "
                  "convert through float)");
    TWIN_CHECK(allowed != 0, call, "A2 (as modelled by the twin) has no Cast from ", TypeName<U>(), " to ",
               TypeName<T>(), " (supported: half/bfloat16_t -> float, float -> half/bfloat16_t/float/int32_t, "
               "half -> int32_t, int32_t -> float)");
    TWIN_CHECK(static_cast<unsigned>(mode) < 8 && (allowed & (1u << static_cast<unsigned>(mode))), call, "A2 allows ",
               ModeList(allowed), " for ", TypeName<U>(), " -> ", TypeName<T>(), " (got ", RoundModeName(mode), ")");
    VecOperand ops[2];
    UnaryOperands(call, dst, src, rp, ops);
    if (!Issue(call, ops, p, -1, sizeof(T) != sizeof(U), VecClass::kCast)) return;
    if constexpr (allowed != 0) {
        CoreState &core = Core();
        const Rounding r = ToRounding(mode);
        ForEachRun(p, ops, [&](const uint32_t *off, uint32_t n) { CastRun<T, U>(core.ub.data(), core.shadow.data(), off, n, r); });
    }
}

template <typename T, typename U>
constexpr uint32_t CastLanes() { return kRepeatBytes / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)); }

}  // namespace twin

namespace AscendC {

template <typename T, typename U>
void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint32_t count)
{
    twin::CastImpl(dst, src, roundMode, twin::CountPlan(twin::CastLanes<T, U>(), count),
                   UnaryRepeatParams(1, 1, sizeof(T) * 8 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)),
                                     sizeof(U) * 8 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U))));
    twin::RestoreDefaultMask();
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, uint64_t mask,
          int64_t repeatTime, const UnaryRepeatParams &params)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("Cast", twin::CastLanes<T, U>(), mask, bits);
    twin::CastImpl(dst, src, roundMode, twin::RepeatPlan("Cast", twin::CastLanes<T, U>(), repeatTime, bits, isSetMask),
                   params);
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint64_t mask[],
          int64_t repeatTime, const UnaryRepeatParams &params)
{
    twin::CastImpl(dst, src, roundMode, twin::RepeatPlan("Cast", twin::CastLanes<T, U>(), repeatTime, mask, isSetMask),
                   params);
}

}  // namespace AscendC
