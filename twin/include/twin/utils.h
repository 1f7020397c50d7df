// Kernel utilities of the twin: printf and DumpTensor (to the launching process's stdout, one core
// at a time), GetSystemCycle (the core's modelled cycle count, see timeline.h), DivCeil, the
// data-cache-bypassing scalar GM accesses, DataSyncBarrier, the task-overlap calls, SetPadValue and
// DisableDmaAtomic. The twin has no data cache and runs one kernel at a time, so DataSyncBarrier,
// SetNextTaskStart and WaitPreTaskEnd order nothing beyond what program order already does.
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

template <typename T>
T ReadGmByPassDCache(T *addr)
{
    const char *call = "ReadGmByPassDCache";
    twin::CheckGm(call, addr, sizeof(T));
    twin::CoreState &core = twin::Core();
    core.gm_log.Record(call, addr, 1, sizeof(T), sizeof(T), twin::GmAccess::kRead);
    core.counters.gm_scalar_reads++;
    twin::OnScalarGm();
    T value;
    std::memcpy(&value, addr, sizeof(T));
    return value;
}

template <typename T>
void WriteGmByPassDCache(T *addr, T value)
{
    const char *call = "WriteGmByPassDCache";
    twin::CheckGm(call, addr, sizeof(T));
    twin::CoreState &core = twin::Core();
    core.gm_log.Record(call, addr, 1, sizeof(T), sizeof(T), twin::GmAccess::kWrite);
    core.counters.gm_scalar_writes++;
    twin::OnScalarGm();
    std::memcpy(addr, &value, sizeof(T));
}

enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };

template <MemDsbT arg0>
void DataSyncBarrier()
{
    twin::Core().counters.pipe_barriers++;
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
