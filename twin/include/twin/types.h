// SPDX-License-Identifier: BSD-3-Clause
// The 16-bit floating-point types of Ascend C kernels, `half` (IEEE binary16) and `bfloat16_t`
// (the upper half of a binary32), in the global namespace as kernels use them.
// Storage is the 16 raw bits. Conversion to float is exact; conversion from float rounds to
// nearest, ties to even (overflow to inf, subnormals kept, NaN stays NaN). Scalar arithmetic goes
// through float and rounds once per operation, as a scalar unit computing in the 16-bit type would.
// The directed rounding modes of Cast live in twin::RoundToHalf / RoundToBf16 below.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace twin {

inline uint32_t FloatBits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float BitsFloat(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// How a float is rounded to 16 bits; names follow AscendC::RoundMode (see cast.h).
enum class Rounding : uint8_t { NearestEven, Floor, Ceil, HalfAway, Trunc, Odd };

// Chooses the 16-bit result from the magnitude truncated toward zero (`trunc`, sign excluded), the
// first discarded bit (`round_bit`) and whether any later discarded bit is set (`sticky`).
// Incrementing the bit pattern carries into the exponent, so subnormal -> normal and
// max finite -> inf come out right.
inline uint16_t ApplyRounding(uint16_t sign, uint32_t trunc, bool round_bit, bool sticky, Rounding mode)
{
    const bool inexact = round_bit || sticky;
    switch (mode) {
    case Rounding::NearestEven: trunc += round_bit && (sticky || (trunc & 1u)); break;
    case Rounding::HalfAway: trunc += round_bit; break;
    case Rounding::Trunc: break;
    case Rounding::Floor: trunc += inexact && sign; break;
    case Rounding::Ceil: trunc += inexact && !sign; break;
    case Rounding::Odd: trunc |= inexact; break;
    }
    return static_cast<uint16_t>(sign | trunc);
}

// float -> binary16 bits with the given rounding.
inline uint16_t RoundToHalf(float f, Rounding mode)
{
    const uint32_t x = FloatBits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));  // quiet NaN
    }
    if (absx == 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (absx >= 0x47800000u) {  // >= 2^16: beyond every finite half; rounds like "max finite + more"
        return ApplyRounding(sign, 0x7bffu, true, true, mode);
    }
    if (absx >= 0x38800000u) {  // half normal range: drop 13 mantissa bits, rebias the exponent
        const uint32_t rest = absx & 0x1fffu;
        return ApplyRounding(sign, (absx - 0x38000000u) >> 13, rest & 0x1000u, rest & 0x0fffu, mode);
    }
    // Half subnormal range: the value in units of 2^-24 is m * 2^(e - 126).
    const uint32_t e = absx >> 23;
    if (e == 0 || 126 - e >= 25) {  // below 2^-25: only the sticky bit survives
        return ApplyRounding(sign, 0, false, absx != 0, mode);
    }
    const uint32_t shift = 126 - e;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    return ApplyRounding(sign, m >> shift, (m >> (shift - 1)) & 1u, (m & ((1u << (shift - 1)) - 1u)) != 0, mode);
}

// float -> bfloat16 bits with the given rounding (same exponent range: only the mantissa shrinks).
inline uint16_t RoundToBf16(float f, Rounding mode)
{
    const uint32_t x = FloatBits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7fc0u | (absx >> 16));  // quiet NaN
    }
    if (absx == 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7f80u);
    }
    return ApplyRounding(sign, absx >> 16, absx & 0x8000u, absx & 0x7fffu, mode);
}

// Round to nearest even without the mode switch: the hot path of every half/bf16 store.
inline uint16_t FloatToHalfRne(float f)
{
    const uint32_t x = FloatBits(f);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x38800000u && absx < 0x477ff000u) {  // normal half, no overflow
        const uint32_t r = absx - 0x38000000u;
        return static_cast<uint16_t>(((x >> 16) & 0x8000u) | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
    }
    return RoundToHalf(f, Rounding::NearestEven);
}
inline uint16_t FloatToBf16Rne(float f)
{
    const uint32_t x = FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    }
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float HalfBitsToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) {
        return BitsFloat(sign | 0x7f800000u | (man << 13));
    }
    if (exp != 0) {
        return BitsFloat(sign | ((exp + 112) << 23) | (man << 13));
    }
    // Subnormal (or zero): man * 2^-24 is exact in float.
    const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
}
inline float Bf16BitsToFloat(uint16_t b) { return BitsFloat(uint32_t(b) << 16); }

// The shared shape of half and bfloat16_t: Traits supply the two conversions.
template <typename Traits>
struct Float16Base {
    uint16_t bits;  // no initialiser: trivial like float, so tensors of it can be memcpy'd

    Float16Base() = default;
    Float16Base(float f) : bits(Traits::FromFloat(f)) {}  // NOLINT: implicit, as in kernels
    template <typename A, typename = std::enable_if_t<std::is_arithmetic_v<A> && !std::is_same_v<A, float>>>
    Float16Base(A a) : bits(Traits::FromFloat(static_cast<float>(a)))  // NOLINT
    {
    }
    operator float() const { return Traits::ToFloat(bits); }  // NOLINT

    static Float16Base FromBits(uint16_t b)
    {
        Float16Base v;
        v.bits = b;
        return v;
    }
    Float16Base operator-() const { return FromBits(bits ^ 0x8000u); }
    Float16Base operator+() const { return *this; }
    // Not templates, so a number converts to the type here: for half that ties with the built-in
    // operator on float (ambiguous, as CANN's half); bfloat16_t's mixed operators below match exactly.
    friend Float16Base operator+(Float16Base a, Float16Base b) { return Float16Base(float(a) + float(b)); }
    friend Float16Base operator-(Float16Base a, Float16Base b) { return Float16Base(float(a) - float(b)); }
    friend Float16Base operator*(Float16Base a, Float16Base b) { return Float16Base(float(a) * float(b)); }
    friend Float16Base operator/(Float16Base a, Float16Base b) { return Float16Base(float(a) / float(b)); }
    Float16Base &operator+=(float o) { return *this = float(*this) + o; }
    Float16Base &operator-=(float o) { return *this = float(*this) - o; }
    // bfloat16_t has += and -= but no *= or /= (CANN's type declares only those two).
    template <typename Tr = Traits, typename = std::enable_if_t<Tr::kScalesInPlace>>
    Float16Base &operator*=(float o) { return *this = float(*this) * o; }
    template <typename Tr = Traits, typename = std::enable_if_t<Tr::kScalesInPlace>>
    Float16Base &operator/=(float o) { return *this = float(*this) / o; }
};

// Same-type arithmetic stays in the type (rounded once). bfloat16_t mixed with another number is
// that number's arithmetic on the exact float value; half mixed with one is ambiguous, as CANN's half
// (it converts to float and from it, so its own operator and the built-in one tie).
// Comparisons are those of the float values.
#define TWIN_F16_OPS(op)                                                                                  \
    template <typename Tr, typename A,                                                                    \
              typename = std::enable_if_t<std::is_arithmetic_v<A> && Tr::kMixesWithNumbers>>             \
    auto operator op(Float16Base<Tr> a, A b) { return float(a) op b; }                                    \
    template <typename Tr, typename A,                                                                    \
              typename = std::enable_if_t<std::is_arithmetic_v<A> && Tr::kMixesWithNumbers>>             \
    auto operator op(A a, Float16Base<Tr> b) { return a op float(b); }
TWIN_F16_OPS(+)
TWIN_F16_OPS(-)
TWIN_F16_OPS(*)
TWIN_F16_OPS(/)
#undef TWIN_F16_OPS

#define TWIN_F16_CMP(op)                                                                                  \
    template <typename Tr>                                                                                \
    bool operator op(Float16Base<Tr> a, Float16Base<Tr> b) { return float(a) op float(b); }              \
    template <typename Tr, typename A, typename = std::enable_if_t<std::is_arithmetic_v<A>>>             \
    bool operator op(Float16Base<Tr> a, A b) { return float(a) op b; }                                    \
    template <typename Tr, typename A, typename = std::enable_if_t<std::is_arithmetic_v<A>>>             \
    bool operator op(A a, Float16Base<Tr> b) { return a op float(b); }
TWIN_F16_CMP(==)
TWIN_F16_CMP(!=)
TWIN_F16_CMP(<)
TWIN_F16_CMP(<=)
TWIN_F16_CMP(>)
TWIN_F16_CMP(>=)
#undef TWIN_F16_CMP

struct HalfTraits {
    static constexpr bool kScalesInPlace = true;
    static constexpr bool kMixesWithNumbers = false;
    static uint16_t FromFloat(float f) { return FloatToHalfRne(f); }
    static float ToFloat(uint16_t b) { return HalfBitsToFloat(b); }
};
struct Bf16Traits {
    static constexpr bool kScalesInPlace = false;
    static constexpr bool kMixesWithNumbers = true;
    static uint16_t FromFloat(float f) { return FloatToBf16Rne(f); }
    static float ToFloat(uint16_t b) { return Bf16BitsToFloat(b); }
};

}  // namespace twin

using half = twin::Float16Base<twin::HalfTraits>;
using bfloat16_t = twin::Float16Base<twin::Bf16Traits>;
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit storage");
static_assert(std::is_trivial_v<half> && std::is_trivial_v<bfloat16_t>, "plain 16-bit data");

namespace AscendC {
// Ascend C's compile-time type choice (std::conditional under its own name), as kernels pick
// half or float by a constant.
template <bool condition, class T1, class T2>
struct Conditional {
    using type = T1;
};
template <class T1, class T2>
struct Conditional<false, T1, T2> {
    using type = T2;
};
}  // namespace AscendC
