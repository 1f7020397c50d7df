// SPDX-License-Identifier: BSD-3-Clause
// One kernel launch on the twin: block_dim AI cores as threads sharing a LaunchState (the GM
// buffers, the tiling key, the SyncAll barrier, the atomic-add lock). A kernel shared object ends
// with TWIN_DEFINE_LAUNCH(entry), which exports the C functions of launch_abi.h; the loader (the
// _twin extension) passes the GM buffers and gets counters and the first rule violation back.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "builtins.h"
#include "core.h"
#include "launch_abi.h"
#include "memory.h"

namespace twin {

// Thrown on a core to unwind it when another core already failed; not an error of its own.
struct LaunchAborted {};

struct LaunchState {
    const SocInfo *soc = nullptr;
    uint32_t block_num = 1;
    uint64_t tiling_key = 0;
    uint64_t seed = 0;  // randomises what the hardware leaves unordered (atomic adds)
    bool auto_sync = false;  // --cce-auto-sync: hazards with the scalar pipe get the compiler's flags (sync.h)
    std::vector<GmRegion> regions;
    std::mutex atomic_mutex;  // held by one core's atomic read-add-write of GM
    std::atomic<bool> aborted{false};
    LaunchTimeline timeline;  // what the cores' performance timelines share (timeline.h)
    std::vector<GmAccessLog> gm_logs;  // each core's GM ranges, checked when all returned (gm_order.h)
    GmFlags gm_flags;  // what the WriteGmByPassDCache flags hold and publish (gm_order.h)

    // All cores of the launch wait here (SyncAll). On the NPU a core that returns from the kernel
    // while others wait leaves them hanging; here the waiters fail instead, and a core that
    // already failed releases them through Abort().
    void Barrier(const char *call)
    {
        std::unique_lock<std::mutex> lock(barrier_mutex_);
        ThrowIfStuck(call);
        uint64_t generation = generation_;
        if (++waiting_ == block_num) {
            waiting_ = 0;
            ++generation_;
            released_.notify_all();
            return;
        }
        released_.wait(lock, [&] { return generation_ != generation || aborted || returned_ > 0; });
        if (generation_ != generation) {
            return;
        }
        --waiting_;
        ThrowIfStuck(call);
    }

    // The launcher's bookkeeping of cores leaving the kernel.
    void CoreReturned(uint32_t block_idx)
    {
        std::lock_guard<std::mutex> lock(barrier_mutex_);
        if (returned_++ == 0) {
            first_returned_ = block_idx;
        }
        returned_core_.resize(block_num, 0);
        returned_core_[block_idx] = 1;
        released_.notify_all();
    }
    // Records the first error of the launch and stops the other cores at their next barrier or
    // GM access.
    void Report(const std::string &message)
    {
        {
            std::lock_guard<std::mutex> lock(error_mutex_);
            if (first_error_.empty()) {
                first_error_ = message;
            }
        }
        std::lock_guard<std::mutex> lock(barrier_mutex_);
        aborted = true;
        released_.notify_all();
    }
    const std::string &FirstError() const { return first_error_; }
    // A core polling GM flags (block_sync.h) whose check failed after it had seen `seen` flag writes:
    // true when every other core has returned or failed its own check since the same write, so no
    // flag can change any more and the wait lasts forever (as on the NPU). Unwinds this core when
    // another one failed.
    bool PollStuck(uint32_t core, uint64_t seen)
    {
        std::lock_guard<std::mutex> lock(barrier_mutex_);
        if (aborted) {
            throw LaunchAborted{};
        }
        poll_failed_at_.resize(block_num, 0);
        returned_core_.resize(block_num, 0);
        poll_failed_at_[core] = seen + 1;
        if (gm_flags.Writes() != seen) {
            return false;
        }
        for (uint32_t c = 0; c < block_num; ++c) {
            if (c != core && !returned_core_[c] && poll_failed_at_[c] != seen + 1) {
                return false;
            }
        }
        return true;
    }
    void PollDone(uint32_t core)
    {
        std::lock_guard<std::mutex> lock(barrier_mutex_);
        poll_failed_at_.resize(block_num, 0);
        poll_failed_at_[core] = 0;
    }

private:
    void ThrowIfStuck(const char *call)
    {
        if (aborted) {
            throw LaunchAborted{};
        }
        TWIN_CHECK(returned_ == 0, call, "core ", first_returned_, " returned from the kernel without reaching ", call,
                   " (the NPU would hang)");
    }

    std::mutex barrier_mutex_;
    std::condition_variable released_;
    uint32_t waiting_ = 0;
    uint64_t generation_ = 0;
    uint32_t returned_ = 0;
    uint32_t first_returned_ = 0;
    std::vector<char> returned_core_;        // per core: returned from the kernel
    std::vector<uint64_t> poll_failed_at_;   // per core: 1 + the flag writes seen by its failed poll, 0: none
    std::mutex error_mutex_;
    std::string first_error_;
};

inline LaunchState &Launch()
{
    CoreState &core = Core();
    if (core.launch == nullptr) {
        throw RuleError(Cat("core ", core.block_idx, ": the core is not part of a kernel launch"));
    }
    return *core.launch;
}

// GM bounds: [p, p + bytes) must lie inside one buffer the launcher passed. The message names the
// nearest buffer and how far the access reaches outside it.
inline void CheckGm(const char *call, const void *p, uint64_t bytes)
{
    LaunchState &launch = Launch();
    if (launch.aborted.load(std::memory_order_relaxed)) {
        throw LaunchAborted{};
    }
    const uint64_t lo = reinterpret_cast<uintptr_t>(p);
    const uint64_t hi = lo + bytes;
    const GmRegion *nearest = nullptr;
    uint64_t nearest_out = UINT64_MAX;
    for (const GmRegion &r : launch.regions) {
        const uint64_t begin = reinterpret_cast<uintptr_t>(r.begin);
        const uint64_t end = begin + r.bytes;
        const uint64_t out = std::max(lo < begin ? begin - lo : 0, hi > end ? hi - end : 0);
        if (out == 0) {
            return;
        }
        if (out < nearest_out) {
            nearest_out = out;
            nearest = &r;
        }
    }
    TWIN_CHECK(nearest != nullptr, call, "accesses GM but the kernel was given no GM buffers (", bytes, " bytes)");
    const int64_t offset = int64_t(lo - reinterpret_cast<uintptr_t>(nearest->begin));
    Fail(call, Cat("the GM access must stay inside a buffer passed to the kernel (", bytes, " bytes at byte offset ",
                   offset, " of '", nearest->name, "', which has ", nearest->bytes, " bytes: ", nearest_out,
                   " bytes ", offset < 0 ? "before its start" : "past its end", ")"));
}

// Records the definedness of GM blocks just written: `count` blocks of `len` bytes, `pitch` apart from
// `gm` on, their UB definedness shadow `src_pitch` apart from `shadow` on (nullptr: a write of defined
// values, such as a scalar store). An atomic write (`merge`) stays undefined where GM already was.
// The bounds were checked (CheckGm).
inline void MarkGmWritten(uint8_t *gm, uint32_t count, uint64_t len, uint64_t pitch, const uint8_t *shadow,
                          uint64_t src_pitch, bool merge)
{
    for (const GmRegion &r : Launch().regions) {
        if (r.undefined == nullptr || gm < r.begin || gm >= r.begin + r.bytes) {
            continue;
        }
        for (uint32_t i = 0; i < count; ++i) {
            uint8_t *flag = r.undefined + (gm - r.begin) + i * pitch;
            const uint8_t *ub = shadow == nullptr ? nullptr : shadow + i * src_pitch;
            if (ub == nullptr || std::memchr(ub, 0, len) == nullptr) {  // every byte defined: the common case
                if (!merge) {
                    std::memset(flag, 0, len);
                }
                continue;
            }
            for (uint64_t k = 0; k < len; ++k) {
                flag[k] = uint8_t((merge && flag[k] != 0) || ub[k] == 0);
            }
        }
        return;
    }
}

// A GM address as "byte offset <k> of '<buffer>'" for messages.
inline std::string DescribeGm(const LaunchState &launch, uint64_t at)
{
    for (const GmRegion &r : launch.regions) {
        const uint64_t begin = reinterpret_cast<uintptr_t>(r.begin);
        if (at >= begin && at < begin + r.bytes) {
            return Cat("byte offset ", at - begin, " of '", r.name, "'");
        }
    }
    return Cat("GM address ", at);
}

// The twin::Counters fields, in order, for the loader (LaunchStats in Python).
#define TWIN_COUNTER_FIELDS(X)                                                                  \
    X(gm_read_bytes) X(gm_write_bytes) X(gm_scalar_reads) X(gm_scalar_writes) X(copy_in_instrs) \
    X(copy_out_instrs) X(vector_instrs) X(vector_repeats) X(active_lanes) X(pipe_barriers) X(sync_alls)   \
    X(ub_peak_bytes)                                                                        \
    X(lane_slots) X(hbm_bytes) X(l2_bytes) X(writeback_bytes) X(past_l2_bytes) X(model_cycles) X(busy_s_cycles) X(busy_v_cycles) X(busy_mte2_cycles) \
    X(busy_mte3_cycles) X(busy_hbm_cycles)
#define TWIN_COUNTER_NAME(field) #field,
inline const char *const kCounterNames[] = {TWIN_COUNTER_FIELDS(TWIN_COUNTER_NAME)};
#undef TWIN_COUNTER_NAME
inline constexpr uint32_t kNumCounters = sizeof(kCounterNames) / sizeof(kCounterNames[0]);
static_assert(sizeof(Counters) == kNumCounters * sizeof(uint64_t),
              "twin::Counters changed: list every field in TWIN_COUNTER_FIELDS (launch.h)");

inline void StoreCounters(const Counters &c, uint64_t *out)
{
    uint32_t i = 0;
#define TWIN_COUNTER_STORE(field) out[i++] = c.field;
    TWIN_COUNTER_FIELDS(TWIN_COUNTER_STORE)
#undef TWIN_COUNTER_STORE
}

template <typename... Params>
void FillKernelInfo(void (*)(Params...), TwinKernelInfo *info)
{
    info->abi_version = TWIN_ABI_VERSION;
    info->entry_arity = sizeof...(Params);
    info->num_counters = kNumCounters;
    info->counter_names = kCounterNames;
}

template <typename... Params, size_t... I>
void CallEntry(void (*entry)(Params...), const TwinGmArg *gm, std::index_sequence<I...>)
{
    static_assert((std::is_pointer_v<Params> && ...), "every kernel entry parameter must be a GM_ADDR");
    entry(reinterpret_cast<Params>(gm[I].data)...);
}

// The launch itself, behind a type-erased entry: `call(entry, gm)` runs the entry on the calling core
// with the GM buffers as its arguments. Defined once, in launch_runtime.cpp, which the twin compiles
// once per header set and flags and links into every kernel object: a kernel's compile then emits
// its own code and not the launcher's (a second of each compile).
using ErasedEntry = void (*)();
using EntryCaller = void (*)(ErasedEntry entry, const TwinGmArg *gm);
int LaunchErased(ErasedEntry entry, EntryCaller call, uint32_t arity, const TwinLaunchArgs &args,
                 TwinLaunchResult &result);

// Runs the kernel entry on args.block_dim cores and reports the first error.
template <typename... Params>
int LaunchKernel(void (*entry)(Params...), const TwinLaunchArgs &args, TwinLaunchResult &result)
{
    const EntryCaller call = [](ErasedEntry erased, const TwinGmArg *gm) {
        CallEntry(reinterpret_cast<void (*)(Params...)>(erased), gm, std::index_sequence_for<Params...>{});
    };
    return LaunchErased(reinterpret_cast<ErasedEntry>(entry), call, sizeof...(Params), args, result);
}

}  // namespace twin

// Exports the C functions of launch_abi.h for the kernel entry `entry`; used once per kernel .so
// by the generated wrapper (ascendc_twin), never by kernels themselves.
#define TWIN_DEFINE_LAUNCH(entry)                                                                       \
    extern "C" __attribute__((visibility("default"))) void twin_kernel_info(TwinKernelInfo *info)       \
    {                                                                                                   \
        ::twin::FillKernelInfo(&entry, info);                                                           \
    }                                                                                                   \
    extern "C" __attribute__((visibility("default"))) int twin_launch(const TwinLaunchArgs *args,       \
                                                                      TwinLaunchResult *result)         \
    {                                                                                                   \
        return ::twin::LaunchKernel(&entry, *args, *result);                                            \
    }                                                                                                   \
    extern "C" __attribute__((visibility("default"))) int twin_current_core(void)                       \
    {                                                                                                   \
        return ::twin::g_core != nullptr ? int(::twin::g_core->block_idx) : -1;                         \
    }
