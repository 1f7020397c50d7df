// SPDX-License-Identifier: BSD-3-Clause
// Per-core state of the CPU twin, the rule-violation error, and the counters.
// Every Ascend C call of the twin runs on one simulated AI vector core: a thread whose g_core points
// at its CoreState. A broken rule throws RuleError("core <i>: <Call>: <rule> (<detail>)").
#pragma once
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gm_order.h"
#include "platform.h"
#include "timeline.h"

namespace twin {

class RuleError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <typename... Parts>
std::string Cat(const Parts &...parts)
{
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

// The pipes of an AI vector core, for counters and the performance timeline.
enum class Pipe : uint8_t { S, V, MTE2, MTE3 };
static_assert(int(Pipe::S) == tl::S && int(Pipe::V) == tl::V && int(Pipe::MTE2) == tl::MTE2 &&
                  int(Pipe::MTE3) == tl::MTE3,
              "timeline.h indexes the pipes in twin::Pipe order");

struct Counters {
    uint64_t gm_read_bytes = 0;     // MTE2: GM -> UB
    uint64_t gm_write_bytes = 0;    // MTE3: UB -> GM (atomic adds included)
    uint64_t gm_scalar_reads = 0;   // GlobalTensor::GetValue
    uint64_t gm_scalar_writes = 0;  // GlobalTensor::SetValue
    uint64_t copy_in_instrs = 0;
    uint64_t copy_out_instrs = 0;
    uint64_t vector_instrs = 0;
    uint64_t vector_repeats = 0;
    uint64_t active_lanes = 0;      // lanes enabled by the mask, summed over repeats
    uint64_t pipe_barriers = 0;     // PipeBarrier and SetFlag/WaitFlag pairs
    uint64_t sync_alls = 0;
    uint64_t ub_peak_bytes = 0;     // the most UB the core's TPipe buffers held at once
    // The performance timeline (timeline.h); busy times and the makespan are stored at kernel exit.
    uint64_t lane_slots = 0;        // lanes the repeats could have enabled: repeats x lanes per repeat
    uint64_t hbm_bytes = 0;         // bytes HBM moved for this core: read misses, bypassing writes, write-backs
    uint64_t l2_bytes = 0;          // GM bytes read from L2
    uint64_t writeback_bytes = 0;   // dirty L2 bytes this core's copies pushed out to HBM (in hbm_bytes)
    uint64_t past_l2_bytes = 0;     // GM bytes copied past L2 (a CACHE_MODE_DISABLE tensor, a GM flag)
    uint64_t model_cycles = 0;      // when the core's last pipe finishes (modelled cycles)
    uint64_t busy_s_cycles = 0;     // per pipe: modelled cycles it was busy
    uint64_t busy_v_cycles = 0;
    uint64_t busy_mte2_cycles = 0;
    uint64_t busy_mte3_cycles = 0;
    uint64_t busy_hbm_cycles = 0;   // this core's share of HBM bandwidth in use
};

// One GM buffer handed to the kernel by the launcher: accesses outside it are errors.
struct GmRegion {
    uint8_t *begin = nullptr;
    uint64_t bytes = 0;
    std::string name;
    uint8_t *undefined = nullptr;  // per byte: 1 = holds undefined data (TwinGmArg::undefined)
};

struct LaunchState;  // shared by all cores of one launch: see launch.h

// Cross-pipe ordering a core has established so far; kept by sync.h (SetFlag/WaitFlag, PipeBarrier).
struct PipeSync {
    static constexpr int kPipes = 4;     // the values of Pipe
    static constexpr int kEventIds = int(kEventIdsPerEvent);  // EVENT_ID0 .. EVENT_ID7
    // [from][to]: work the `from` pipe issued before this instruction seq is visible to the `to` pipe.
    uint64_t visible_seq[kPipes][kPipes] = {};
    uint64_t barrier_all_seq = 0;  // PipeBarrier<PIPE_ALL>: everything issued before it is done
    // What a SetFlag passes on: [p] = the seq up to which pipe p's work was visible to the setting
    // pipe when it set the flag (its own work: the SetFlag's seq), so orderings chain through pipes.
    struct Flag {
        uint32_t pending = 0;  // SetFlag calls not yet matched by a WaitFlag
        uint64_t first[kPipes] = {}, last[kPipes] = {};  // the oldest and newest pending SetFlag
    };
    Flag flags[kPipes][kPipes][kEventIds];
};

struct CoreState {
    uint32_t block_idx = 0;
    uint32_t block_num = 1;
    const SocInfo *soc = nullptr;
    LaunchState *launch = nullptr;

    // Unified Buffer: data bytes and a definedness shadow (1 = written, 0 = poison).
    std::vector<uint8_t> ub;
    std::vector<uint8_t> shadow;
    uint32_t ub_usable = 0;  // bytes a kernel's TPipe may carve (platform.h: the whole UB on A2)

    // Vector mask registers (SetMaskNorm / SetMaskCount / SetVectorMask).
    bool mask_count_mode = false;
    uint64_t mask[2] = {~0ull, ~0ull};

    // SetAtomicAdd/Max/Min<T>() state: atomic_dtype 0 = off, else T's dtype code; atomic_op the
    // operation (twin::AtomicOp, data_copy.h).
    int atomic_dtype = 0;
    uint8_t atomic_op = 0;

    // The 128-bit CmpMask register: written by Compare without a destination and SetCmpMask, read
    // by GetCmpMask and Select mode VSEL_CMPMASK_SPR (compare_select.h). Undefined until written.
    uint64_t cmp_mask[2] = {0, 0};
    bool cmp_mask_defined = false;
    // SetPadValue: what DataCopyPad with isPad false puts into its padding (pad_value_bytes = 0: unset).
    uint64_t pad_value = 0;
    uint8_t pad_value_bytes = 0;
    // The sum register the count form of ReduceSum leaves behind (GetReduceRepeatSumSpr): the
    // result's bits and its size (0: no count-form ReduceSum ran on this core yet).
    uint32_t reduce_sum_spr = 0;
    uint8_t reduce_sum_spr_bytes = 0;

    Counters counters;
    GmAccessLog gm_log;      // GM ranges touched per segment between ordering points (gm_order.h)
    GmPipeLog gm_pipes;      // GM bytes by the pipe of this core that used them (gm_order.h)
    uint64_t instr_seq = 0;  // instructions issued so far on this core (pipe hazard tracking)
    PipeSync pipe_sync;
    CoreTimeline timeline;  // the modelled pipes of this core (timeline.h), fed by the hooks below

    // A rule broken where throwing is not possible (a destructor at kernel exit): the launcher
    // reports it after the kernel entry returns.
    std::string deferred_error;

    explicit CoreState(const SocInfo &s, uint32_t idx, uint32_t num)
        : block_idx(idx), block_num(num), soc(&s), ub(s.ub_bytes, 0xFF), shadow(s.ub_bytes, 0),
          ub_usable(s.UbUsableBytes()), gm_log(idx, num), timeline(s, num)
    {
    }

    // Definedness of UB bytes [off, off + n).
    void MarkDefined(uint32_t off, uint32_t n) { std::memset(shadow.data() + off, 1, n); }
    void MarkUndefined(uint32_t off, uint32_t n)
    {
        std::memset(ub.data() + off, 0xFF, n);
        std::memset(shadow.data() + off, 0, n);
    }
    bool AllDefined(uint32_t off, uint32_t n) const
    {
        return std::memchr(shadow.data() + off, 0, n) == nullptr;
    }
};

inline thread_local CoreState *g_core = nullptr;

inline CoreState &Core()
{
    if (g_core == nullptr) {
        throw RuleError("Ascend C API called outside a kernel launch (no current AI core)");
    }
    return *g_core;
}

// Throws the rule violation for `call`, naming the current core.
[[noreturn]] inline void Fail(const char *call, const std::string &rule)
{
    std::string who = g_core ? Cat("core ", g_core->block_idx) : std::string("host");
    throw RuleError(Cat(who, ": ", call, ": ", rule));
}

// Every instruction reports itself through these hooks, after its rule checks passed: they keep
// the counters and place the instruction on its pipe in the performance timeline (timeline.h).
// A GM copy names its GM side: `blocks` blocks of bytes / blocks each, `gm_pitch` bytes apart
// (start to start), from `gm` on; without it the model counts every byte as an HBM first touch.
inline void OnCopyIn(uint64_t bytes, const void *gm = nullptr, uint32_t blocks = 1, uint64_t gm_pitch = 0)
{
    CoreState &core = Core();
    Counters &c = core.counters;
    c.copy_in_instrs++;
    c.gm_read_bytes += bytes;
    const L2Model::Split split = core.timeline.Copy(tl::MTE2, bytes, gm, blocks, gm_pitch);
    c.hbm_bytes += split.hbm + split.written_back;
    c.l2_bytes += split.l2;
    c.writeback_bytes += split.written_back;
    c.past_l2_bytes += gm == nullptr ? bytes : 0;
}
inline void OnCopyOut(uint64_t bytes, const void *gm = nullptr, uint32_t blocks = 1, uint64_t gm_pitch = 0)
{
    CoreState &core = Core();
    Counters &c = core.counters;
    c.copy_out_instrs++;
    c.gm_write_bytes += bytes;
    const L2Model::Split split = core.timeline.Copy(tl::MTE3, bytes, gm, blocks, gm_pitch);
    c.hbm_bytes += split.hbm + split.written_back;
    c.writeback_bytes += split.written_back;
    c.past_l2_bytes += gm == nullptr ? bytes : 0;
}
// One vector instruction: `repeats` repeats with `lanes` mask-enabled lanes in all, out of
// `lane_slots` = repeats x lanes per repeat (0: 64 per repeat, the fp32 width); `cls` prices it.
inline void OnVector(uint64_t repeats, uint64_t lanes, uint64_t lane_slots = 0, VecClass cls = VecClass::kElementwise)
{
    CoreState &core = Core();
    Counters &c = core.counters;
    c.vector_instrs++;
    c.vector_repeats += repeats;
    c.active_lanes += lanes;
    c.lane_slots += lane_slots != 0 ? lane_slots : repeats * (kRepeatBytes / sizeof(float));
    core.timeline.Vector(repeats, cls);
}
// GlobalTensor::GetValue / SetValue: the scalar unit waits for GM.
inline void OnScalarGm() { Core().timeline.ScalarGm(); }

// The synchronisation the kernel writes, for the timeline's dependencies. A queue buffer passes
// from its producer pipe (VECIN: MTE2, VECOUT: V) to its consumer pipe (VECIN: V, VECOUT: MTE3).
inline void OnAllocTensor(const void *queue, const void *buffer, uint32_t buffers, Pipe producer)
{
    Core().timeline.Alloc(queue, buffer, buffers, int(producer));
}
inline void OnEnQue(const void *buffer, Pipe producer) { Core().timeline.EnQue(buffer, int(producer)); }
inline void OnDeQue(const void *buffer, Pipe consumer) { Core().timeline.DeQue(buffer, int(consumer)); }
inline void OnFreeTensor(const void *buffer, Pipe consumer) { Core().timeline.Free(buffer, int(consumer)); }
inline void OnSetFlag(Pipe from, Pipe to, int id) { Core().timeline.SetFlag(int(from), int(to), id); }
inline void OnWaitFlag(Pipe from, Pipe to, int id) { Core().timeline.WaitFlag(int(from), int(to), id); }
inline void OnAutoFlagPair(Pipe from, Pipe to) { Core().timeline.FlagPair(int(from), int(to)); }
inline void OnBarrierAll() { Core().timeline.BarrierAll(); }
inline void OnPipeBarrier(Pipe pipe) { Core().timeline.PipeBarrier(int(pipe)); }
// SyncAll: before the launch barrier (this core's pipes drain) and after it (the slowest core's time).
inline void OnSyncAllArrive() { Core().timeline.SyncArrive(); }
inline void OnSyncAllLeave() { Core().timeline.SyncLeave(); }

// Kernel exit: the timeline's busy times and makespan into the counters (the launcher calls it).
inline void StoreTimeline(CoreState &core)
{
    Counters &c = core.counters;
    const CoreTimeline &t = core.timeline;
    c.model_cycles = uint64_t(t.End() + 0.5);
    c.busy_s_cycles = uint64_t(t.Busy(tl::S) + 0.5);
    c.busy_v_cycles = uint64_t(t.Busy(tl::V) + 0.5);
    c.busy_mte2_cycles = uint64_t(t.Busy(tl::MTE2) + 0.5);
    c.busy_mte3_cycles = uint64_t(t.Busy(tl::MTE3) + 0.5);
    c.busy_hbm_cycles = uint64_t(t.ChannelBusy() + 0.5);
}

}  // namespace twin

// Rule check: TWIN_CHECK(condition, "DataCopy", "count * sizeof(T) must be a multiple of 32 bytes (got ", n, ")")
#define TWIN_CHECK(cond, call, ...)                        \
    do {                                                   \
        if (!(cond)) {                                     \
            ::twin::Fail((call), ::twin::Cat(__VA_ARGS__)); \
        }                                                  \
    } while (0)
