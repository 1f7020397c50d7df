// SPDX-License-Identifier: BSD-3-Clause
// Kernel utilities of the twin: printf and DumpTensor (to the launching process's stdout, one core
// at a time), GetSystemCycle (the core's modelled cycle count, see timeline.h), DivCeil, the
// data-cache-bypassing scalar GM accesses and DataSyncBarrier (together they order cores through
// GM flags, gm_order.h), the task-overlap calls, SetPadValue and DisableDmaAtomic. The twin runs one
// kernel at a time, so SetNextTaskStart and WaitPreTaskEnd order nothing beyond program order.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "core.h"
#include "launch.h"
#include "memory.h"
#include "sync.h"

namespace twin {

inline std::mutex &PrintMutex()
{
    static std::mutex m;
    return m;
}

}  // namespace twin

namespace AscendC {

// Like C's printf, from a kernel; each call's text is written whole.
template <typename... Args>
void printf(const char *fmt, Args &&...args)
{
    std::lock_guard<std::mutex> lock(twin::PrintMutex());
    if constexpr (sizeof...(Args) == 0) {
        std::fputs(fmt, stdout);
    } else {
        std::printf(fmt, args...);
    }
    std::fflush(stdout);
}

template <typename T>
void DumpTensor(const LocalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize)
{
    const char *call = "DumpTensor";
    tensor.Check(call);
    TWIN_CHECK(dumpSize <= tensor.GetSize(), call, "dumpSize must not exceed the tensor size (", dumpSize, " > ",
               tensor.GetSize(), ")");
    std::lock_guard<std::mutex> lock(twin::PrintMutex());
    std::printf("DumpTensor: desc=%u, core %u, %u elements:", desc, twin::Core().block_idx, dumpSize);
    for (uint32_t i = 0; i < dumpSize; ++i) {
        T v;
        std::memcpy(&v, tensor.Data() + i, sizeof(T));
        if constexpr (std::is_integral_v<T>) std::printf(" %lld", static_cast<long long>(v));
        else std::printf(" %g", double(float(v)));
    }
    std::printf("\n");
    std::fflush(stdout);
}

inline int64_t GetSystemCycle() { return int64_t(twin::Core().timeline.End()); }

template <typename T, typename U>
constexpr auto DivCeil(T a, U b) { return (a + b - 1) / b; }

// a rounded up to a multiple of b.
constexpr uint32_t AlignUp(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }

// A scalar GM read past the data cache. It is how a core polls a flag another core sets: when it
// returns the value of a WriteGmByPassDCache that followed a DataSyncBarrier, everything that core
// did before the barrier is ordered before what this core does next (gm_order.h).
template <typename T>
T ReadGmByPassDCache(T *addr)
{
    const char *call = "ReadGmByPassDCache";
    twin::CheckGm(call, addr, sizeof(T));
    twin::CoreState &core = twin::Core();
    core.gm_log.Record(call, addr, 1, sizeof(T), sizeof(T), twin::GmAccess::kFlagRead);
    core.counters.gm_scalar_reads++;
    twin::OnScalarGm();
    T value;
    core.gm_log.Acquire(twin::Launch().gm_flags.Read(addr, &value, sizeof(T)));
    return value;
}

// A scalar GM write past the data cache. After a DataSyncBarrier it sets a flag: it publishes that
// this core's GM accesses before the barrier are done. Without one it is a plain GM write.
template <typename T>
void WriteGmByPassDCache(T *addr, T value)
{
    const char *call = "WriteGmByPassDCache";
    twin::CheckGm(call, addr, sizeof(T));
    twin::CoreState &core = twin::Core();
    const twin::GmClock &published = core.gm_log.Released();
    core.gm_log.Record(call, addr, 1, sizeof(T), sizeof(T),
                       published.empty() ? twin::GmAccess::kWrite : twin::GmAccess::kFlagWrite);
    core.counters.gm_scalar_writes++;
    twin::OnScalarGm();
    twin::Launch().gm_flags.Write(addr, &value, sizeof(T), published);
    core.gm_log.Wrote(addr, 1, sizeof(T), sizeof(T), &value, sizeof(T));
    twin::MarkGmWritten(reinterpret_cast<uint8_t *>(addr), 1, sizeof(T), sizeof(T), nullptr, 0, false);
}

enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };

// Waits until the core's earlier accesses of the given memory are done. The documentation counts
// every GM access instruction (DDR, ALL), so the twin takes all of the core's earlier GM accesses,
// whatever pipe issued them, as complete for the flag written next.
template <MemDsbT arg0>
void DataSyncBarrier()
{
    twin::CoreState &core = twin::Core();
    core.counters.pipe_barriers++;
    if (arg0 == MemDsbT::DDR || arg0 == MemDsbT::ALL) {
        core.gm_log.Release();
    }
}

template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
void SetNextTaskStart()
{
}

template <bool FORCE = false>
void WaitPreTaskEnd()
{
}

// DataCopyPad with isPad false fills its padding with this value (data_copy.h), for copies of
// elements of sizeof(T) bytes.
template <typename T, TPosition pos = TPosition::MAX>
void SetPadValue(T paddingValue)
{
    static_assert(sizeof(T) <= 8, "SetPadValue takes an element type of at most 8 bytes");
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT,
                  "SetPadValue's pos is VECIN, VECOUT or MAX");
    twin::CoreState &core = twin::Core();
    core.pad_value = 0;
    std::memcpy(&core.pad_value, &paddingValue, sizeof(T));
    core.pad_value_bytes = sizeof(T);
}

// The newer name of SetAtomicNone: copies to GM no longer add.
inline void DisableDmaAtomic() { twin::Core().atomic_dtype = 0; }

}  // namespace AscendC
