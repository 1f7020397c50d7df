// SPDX-License-Identifier: BSD-3-Clause
// The atomic modes of copies to GM: between SetAtomicAdd / SetAtomicMax / SetAtomicMin and
// SetAtomicNone (or DisableDmaAtomic, utils.h), every UB -> GM copy combines each element with what GM
// holds (data_copy.h does it under the launch's lock). Types, per CANN's documentation and its
// CPU-debug assertion: half, bfloat16_t, float, int8_t, int16_t, int32_t, checked at compile time.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core.h"
#include "gm_order.h"
#include "types.h"

namespace twin {

// What copies to GM do with the bytes already there while an atomic mode is on (CoreState::atomic_op).
enum class AtomicOp : uint8_t { kAdd, kMax, kMin };
inline const char *AtomicCall(uint8_t op)
{
    static const char *const names[] = {"SetAtomicAdd", "SetAtomicMax", "SetAtomicMin"};
    return names[op];
}
inline GmAccess AtomicKind(uint8_t op)
{
    static const GmAccess kinds[] = {GmAccess::kAtomicAdd, GmAccess::kAtomicMax, GmAccess::kAtomicMin};
    return kinds[op];
}

// The dtype code SetAtomicAdd/Max/Min store in CoreState::atomic_dtype (0 = atomic off).
template <typename T>
constexpr int AtomicCode()
{
    if constexpr (std::is_same_v<T, half>) return 1;
    else if constexpr (std::is_same_v<T, bfloat16_t>) return 2;
    else if constexpr (std::is_same_v<T, float>) return 3;
    else if constexpr (std::is_same_v<T, int8_t>) return 4;
    else if constexpr (std::is_same_v<T, int16_t>) return 5;
    else if constexpr (std::is_same_v<T, int32_t>) return 6;
    else return 0;
}
inline const char *AtomicName(int code)
{
    static const char *const names[] = {"none", "half", "bfloat16_t", "float", "int8_t", "int16_t", "int32_t"};
    return code >= 0 && code <= 6 ? names[code] : "unsupported";
}

}  // namespace twin

namespace AscendC {

// Until SetAtomicNone / DisableDmaAtomic, copies to GM add into it (half, bfloat16_t, float, int8/16/32).
template <typename T>
void SetAtomicAdd()
{
    static_assert(twin::AtomicCode<T>() != 0, "SetAtomicAdd supports half, bfloat16_t, float, int8_t, int16_t, int32_t");
    twin::Core().atomic_dtype = twin::AtomicCode<T>();
    twin::Core().atomic_op = uint8_t(twin::AtomicOp::kAdd);
}
// Until SetAtomicNone / DisableDmaAtomic, each element copied to GM becomes the larger of it and what
// GM held (same types as SetAtomicAdd).
template <typename T>
void SetAtomicMax()
{
    static_assert(twin::AtomicCode<T>() != 0, "SetAtomicMax supports half, bfloat16_t, float, int8_t, int16_t, int32_t");
    twin::Core().atomic_dtype = twin::AtomicCode<T>();
    twin::Core().atomic_op = uint8_t(twin::AtomicOp::kMax);
}
// As SetAtomicMax, with the smaller of the two.
template <typename T>
void SetAtomicMin()
{
    static_assert(twin::AtomicCode<T>() != 0, "SetAtomicMin supports half, bfloat16_t, float, int8_t, int16_t, int32_t");
    twin::Core().atomic_dtype = twin::AtomicCode<T>();
    twin::Core().atomic_op = uint8_t(twin::AtomicOp::kMin);
}
inline void SetAtomicNone() { twin::Core().atomic_dtype = 0; }

}  // namespace AscendC
