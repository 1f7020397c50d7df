// SPDX-License-Identifier: BSD-3-Clause
// Ordering of the pipes of one core (PipeBarrier, SetFlag/WaitFlag) and of the cores of a launch
// (SyncAll). On the NPU the scalar, vector (V) and copy pipes (MTE2: GM -> UB, MTE3: UB -> GM) run
// concurrently; the twin runs each instruction to completion in program order, so instead it checks
// that a kernel would not race: PipeAccess below flags UB data crossing pipes without an ordering.
// Rules guarded here: cross-pipe hazards (read-after-write, write-after-write, write-after-read) on UB
// buffers and on GM bytes of the same core (the scalar pipe included: LocalTensor and GlobalTensor
// GetValue/SetValue, unless the launch models --cce-auto-sync: AutoSynced), overlapping GM writes of MTE3 ordered by PipeBarrier<PIPE_MTE3>, every WaitFlag
// has its SetFlag and every SetFlag its WaitFlag by kernel exit, no SetFlag/WaitFlag on an event id a
// queue holds, SyncAll reached by all cores, the software SyncAll's workspaces large enough.
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "core.h"
#include "launch.h"
#include "memory.h"

namespace AscendC {

enum pipe_t : uint8_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_V2, PIPE_FIX };

// HardEvent::X_Y: pipe Y waits for what pipe X issued before the SetFlag; the documented events
// between the pipes of a vector core. The value encodes both pipes (twin::Pipe order: S, V, MTE2,
// MTE3) so the twin reads them back; kernels use only the names.
enum class HardEvent : uint8_t {
    S_V = 0x01, S_MTE2 = 0x02, S_MTE3 = 0x03,
    V_S = 0x10, V_V = 0x11, V_MTE2 = 0x12, V_MTE3 = 0x13,
    MTE2_S = 0x20, MTE2_V = 0x21, MTE2_MTE3 = 0x23,
    MTE3_S = 0x30, MTE3_V = 0x31, MTE3_MTE2 = 0x32,
};

enum event_t : int32_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
using TEventID = int8_t;

}  // namespace AscendC

namespace twin {

inline constexpr uint32_t kEventIds = PipeSync::kEventIds;

using Handoff = uint64_t[PipeSync::kPipes];

// A pipe signals (SetFlag, EnQue, FreeTensor): it passes on, per pipe p, the seq up to which p's work
// was visible to it, and its own work up to now. Pipes run in order, so orderings chain.
inline void Signal(CoreState &core, Pipe from, Handoff &out)
{
    for (int p = 0; p < PipeSync::kPipes; ++p) {
        out[p] = core.pipe_sync.visible_seq[p][int(from)];
    }
    out[int(from)] = ++core.instr_seq;
}
// A fault-injection hook for test harnesses: set around one queue call of an instrumented kernel, the
// DeQue or AllocTensor keeps its bookkeeping but waits for nothing, as if the flag the queue inserts
// there were taken out of the kernel; a harness shows that way that a kernel's tests notice a
// missing wait. Never set by the twin itself.
inline thread_local bool g_queue_wait_dropped = false;

// A pipe waits for a signal (WaitFlag, DeQue, AllocTensor): what was passed on becomes visible to it.
inline void Receive(CoreState &core, Pipe to, const Handoff &in)
{
    if (g_queue_wait_dropped) {
        return;
    }
    for (int p = 0; p < PipeSync::kPipes; ++p) {
        uint64_t &visible = core.pipe_sync.visible_seq[p][int(to)];
        visible = std::max(visible, in[p]);
    }
}

inline const char *PipeName(Pipe p)
{
    static const char *const names[] = {"S", "V", "MTE2", "MTE3"};
    return names[int(p)];
}

// True when the `to` pipe may touch data that the `from` pipe used at instruction `seq`.
inline bool Ordered(const CoreState &core, Pipe from, Pipe to, uint64_t seq)
{
    const PipeSync &s = core.pipe_sync;
    return s.barrier_all_seq > seq || s.visible_seq[int(from)][int(to)] > seq;
}

// --cce-auto-sync (the launch's auto_sync, off by default: see RULES.md): bisheng inserts the
// SetFlag/WaitFlag pair between PIPE_S and V / MTE2 / MTE3, both ways, where a hazard needs it. A
// hazard with the scalar pipe on either side gets that pair here, at the access, through the steps an
// explicit SetFlag then WaitFlag take (and their cost on the timeline); returns false when the
// compiler would insert nothing (auto-sync off, or neither pipe is S: the queues' or the kernel's job).
inline bool AutoSynced(CoreState &core, Pipe from, Pipe to)
{
    if (core.launch == nullptr || !core.launch->auto_sync || (from != Pipe::S && to != Pipe::S)) {
        return false;
    }
    Handoff handoff;
    Signal(core, from, handoff);
    Receive(core, to, handoff);
    core.counters.pipe_barriers++;
    ++core.instr_seq;
    OnAutoFlagPair(from, to);
    return true;
}

// Defines the rule declared in memory.h. The whole buffer is the unit: two pipes using disjoint parts
// of one TBuf still need the flag between them (a kernel that reuses one buffer needs it anyway).
inline void PipeAccess(const char *call, BufferSlot *slot, Pipe pipe, bool write, uint64_t lo, uint64_t hi)
{
    CoreState &core = Core();
    const uint64_t seq = ++core.instr_seq;
    const uint32_t blocks = (slot->bytes + kUbBlockBytes - 1) / kUbBlockBytes;
    if (slot->uses.size() != blocks) slot->uses.assign(blocks, BufferSlot::BlockUse{});
    uint32_t first = 0, last = blocks;
    if (lo != 0 || hi != 0) {  // the blocks of [lo, hi) inside this buffer
        const uint64_t begin = std::max<uint64_t>(lo, slot->offset), end = std::min<uint64_t>(hi, slot->offset + slot->bytes);
        if (begin >= end) return;
        first = uint32_t((begin - slot->offset) / kUbBlockBytes);
        last = uint32_t((end - slot->offset + kUbBlockBytes - 1) / kUbBlockBytes);
    }
    for (uint32_t b = first; b < last; ++b) {
        BufferSlot::BlockUse &u = slot->uses[b];
        const uint64_t at = slot->offset + uint64_t(b) * kUbBlockBytes;
        if (u.write_seq != 0 && u.last_writer != pipe && !Ordered(core, u.last_writer, pipe, u.write_seq) &&
            !AutoSynced(core, u.last_writer, pipe)) {
            Fail(call, Cat("data written by one pipe and then ", write ? "overwritten" : "read",
                           " by another needs EnQue/DeQue of the buffer, SetFlag/WaitFlag<HardEvent::",
                           PipeName(u.last_writer), "_", PipeName(pipe), "> or PipeBarrier<PIPE_ALL> in between (",
                           PipeName(u.last_writer), " wrote, ", PipeName(pipe), " ", write ? "writes" : "reads",
                           " the ", slot->owner, " buffer at UB offset ", slot->offset, ", its block at ", at, ")"));
        }
        for (int p = 0; write && p < PipeSync::kPipes; ++p) {
            if (p != int(pipe) && u.read_seq[p] != 0 && !Ordered(core, Pipe(p), pipe, u.read_seq[p]) &&
                !AutoSynced(core, Pipe(p), pipe)) {
                Fail(call, Cat("data read by one pipe and then overwritten by another needs EnQue/DeQue of the buffer, "
                               "SetFlag/WaitFlag<HardEvent::", PipeName(Pipe(p)), "_", PipeName(pipe),
                               "> or PipeBarrier<PIPE_ALL> in between (", PipeName(Pipe(p)), " read, ", PipeName(pipe),
                               " overwrites the ", slot->owner, " buffer at UB offset ", slot->offset, ", its block at ",
                               at, ")"));
            }
        }
        if (write) {  // every read before it was ordered before this write, so later writes order after them too
            u.last_writer = pipe;
            u.write_seq = seq;
            std::fill(std::begin(u.read_seq), std::end(u.read_seq), 0);
        } else {
            u.read_seq[int(pipe)] = seq;
        }
    }
}

// Defines the rule declared in memory.h. The same pipe needs no ordering with itself, except MTE3
// writing GM bytes it wrote before (the documentation asks for PipeBarrier<PIPE_MTE3> when the
// addresses of two copies overlap; atomic adds may overlap each other).
inline void TouchGm(const char *call, const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, GmAccess kind,
                    Pipe pipe)
{
    CoreState &core = Core();
    core.gm_log.Record(call, gm, blocks, len, pitch, kind);  // the order across cores: gm_order.h
    const uint64_t seq = ++core.instr_seq;
    const bool write = kind != GmAccess::kRead, atomic = IsAtomic(kind);
    auto check = [&](uint64_t lo, const GmPipeLog::Use &u) {
        const Pipe writer = Pipe(u.writer);
        const bool sameAsWriter = u.writer == int(pipe);
        const bool needsOrder = u.writer >= 0 && (!sameAsWriter || (pipe == Pipe::MTE3 && write && !(atomic && u.atomic)));
        if (needsOrder && !Ordered(core, writer, pipe, u.write_seq) && !AutoSynced(core, writer, pipe)) {
            const std::string order = sameAsWriter ? Cat("PipeBarrier<PIPE_", PipeName(pipe), ">")
                                                   : Cat("SetFlag/WaitFlag<HardEvent::", PipeName(writer), "_", PipeName(pipe), ">");
            Fail(call, Cat("GM bytes written by one pipe of a core and then ", write ? "overwritten" : "read",
                           sameAsWriter ? " by the same pipe" : " by another", " need ", order,
                           " or PipeBarrier<PIPE_ALL> in between (", PipeName(writer), " wrote them with ", u.write_call,
                           ", ", PipeName(pipe), " ", write ? "writes" : "reads", " ", u.hi - lo, " bytes from ",
                           DescribeGm(Launch(), lo), ")"));
        }
        for (int p = 0; write && p < PipeSync::kPipes; ++p) {
            if (p != int(pipe) && u.read_seq[p] != 0 && !Ordered(core, Pipe(p), pipe, u.read_seq[p]) &&
                !AutoSynced(core, Pipe(p), pipe)) {
                Fail(call, Cat("GM bytes read by one pipe of a core and then overwritten by another need "
                               "SetFlag/WaitFlag<HardEvent::", PipeName(Pipe(p)), "_", PipeName(pipe),
                               "> or PipeBarrier<PIPE_ALL> in between (", PipeName(Pipe(p)), " read them, ",
                               PipeName(pipe), " writes ", u.hi - lo, " bytes from ", DescribeGm(Launch(), lo), ")"));
            }
        }
    };
    const uint64_t base = reinterpret_cast<uintptr_t>(gm);
    const uint32_t parts = pitch == len ? 1 : blocks;
    const uint64_t partLen = pitch == len ? uint64_t(blocks) * len : len;
    for (uint32_t i = 0; i < parts; ++i) {
        core.gm_pipes.Access(base + i * pitch, base + i * pitch + partLen, int(pipe), write, atomic, seq, call, check);
    }
}

inline std::string EventName(AscendC::HardEvent evt)
{
    return Cat(PipeName(Pipe(int(evt) >> 4)), "_", PipeName(Pipe(int(evt) & 0xF)));
}

// True when a queue of the core's TPipe holds `id` of `evt` (an EnQue until its DeQue, a FreeTensor
// until its buffer's next AllocTensor): the queue's own SetFlag/WaitFlag use it. Defined in tpipe.h.
bool QueueHoldsEventId(AscendC::HardEvent evt, int32_t id);

// SetFlag/WaitFlag on such an id mixes the kernel's handshake with the queue's.
inline void CheckNotQueueHeld(const char *call, AscendC::HardEvent evt, int32_t id)
{
    TWIN_CHECK(!QueueHoldsEventId(evt, id), call, "the event id must not be one a queue holds (HardEvent::",
               EventName(evt), ", event id ", id, " is held by an EnQue or FreeTensor; take ids with AllocEventID or "
               "FetchEventID; stricter than CANN, which does not check it)");
}

// Kernel exit: a SetFlag nobody waited for leaves the event set on the NPU, and the next kernel's
// WaitFlag on it passes too early.
inline void CheckFlagsAtExit()
{
    CoreState &core = Core();
    for (int from = 0; from < PipeSync::kPipes; ++from) {
        for (int to = 0; to < PipeSync::kPipes; ++to) {
            for (uint32_t id = 0; id < kEventIds; ++id) {
                if (core.pipe_sync.flags[from][to][id].pending != 0 && core.deferred_error.empty()) {
                    core.deferred_error = Cat("core ", core.block_idx, ": SetFlag: every SetFlag needs its WaitFlag "
                                              "before the kernel ends (HardEvent::", PipeName(Pipe(from)), "_",
                                              PipeName(Pipe(to)), ", event id ", id, ")");
                }
            }
        }
    }
}

inline void BarrierAllPipes()
{
    CoreState &core = Core();
    core.counters.pipe_barriers++;
    core.pipe_sync.barrier_all_seq = ++core.instr_seq;
    core.gm_pipes.Clear();  // every GM access before it is done
    OnBarrierAll();
}

}  // namespace twin

namespace AscendC {

template <pipe_t pipe>
inline void PipeBarrier()
{
    twin::CoreState &core = twin::Core();
    if (pipe == PIPE_ALL) {
        twin::BarrierAllPipes();
        return;
    }
    core.counters.pipe_barriers++;
    if (pipe == PIPE_MTE2 || pipe == PIPE_MTE3) {
        const int p = int(pipe == PIPE_MTE2 ? twin::Pipe::MTE2 : twin::Pipe::MTE3);
        core.pipe_sync.visible_seq[p][p] = ++core.instr_seq;  // the pipe's own earlier copies are done
    }
    if (pipe == PIPE_V || pipe == PIPE_S || pipe == PIPE_MTE2 || pipe == PIPE_MTE3) {
        twin::OnPipeBarrier(pipe == PIPE_V ? twin::Pipe::V : pipe == PIPE_S ? twin::Pipe::S
                            : pipe == PIPE_MTE2 ? twin::Pipe::MTE2 : twin::Pipe::MTE3);
    }
}

template <HardEvent evt>
inline void SetFlag(int32_t eventID)
{
    twin::CoreState &core = twin::Core();
    TWIN_CHECK(eventID >= 0 && uint32_t(eventID) < twin::kEventIds, "SetFlag", "the event id must be in [0, ",
               twin::kEventIds, ") (got ", eventID, ")");
    twin::CheckNotQueueHeld("SetFlag", evt, eventID);
    const int from = int(evt) >> 4, to = int(evt) & 0xF;
    twin::PipeSync::Flag &f = core.pipe_sync.flags[from][to][eventID];
    twin::Signal(core, twin::Pipe(from), f.last);
    if (f.pending++ == 0) {
        std::copy(f.last, f.last + twin::PipeSync::kPipes, f.first);
    }
    twin::OnSetFlag(twin::Pipe(from), twin::Pipe(to), eventID);
}

// The `to` pipe waits for the oldest pending SetFlag of the event.
template <HardEvent evt>
inline void WaitFlag(int32_t eventID)
{
    twin::CoreState &core = twin::Core();
    TWIN_CHECK(eventID >= 0 && uint32_t(eventID) < twin::kEventIds, "WaitFlag", "the event id must be in [0, ",
               twin::kEventIds, ") (got ", eventID, ")");
    twin::CheckNotQueueHeld("WaitFlag", evt, eventID);
    const int from = int(evt) >> 4, to = int(evt) & 0xF;
    twin::PipeSync::Flag &f = core.pipe_sync.flags[from][to][eventID];
    TWIN_CHECK(f.pending > 0, "WaitFlag", "a WaitFlag needs a matching SetFlag before it (HardEvent::",
               twin::EventName(evt), ", event id ", eventID, ": none pending; it would hang on the NPU)");
    twin::Receive(core, twin::Pipe(to), f.first);
    // Exact for up to two pending SetFlags; beyond that the middle ones are approximated by the newest.
    std::copy(f.last, f.last + twin::PipeSync::kPipes, f.first);
    f.pending--;
    core.counters.pipe_barriers++;
    ++core.instr_seq;
    twin::OnWaitFlag(twin::Pipe(from), twin::Pipe(to), eventID);
}

// All cores of the launch wait here; like PipeBarrier<PIPE_ALL>, every pipe of this core is done.
template <bool isAIVOnly = true>
void SyncAll()
{
    twin::CoreState &core = twin::Core();
    core.pipe_sync.barrier_all_seq = ++core.instr_seq;
    core.gm_pipes.Clear();
    core.counters.sync_alls++;
    twin::OnSyncAllArrive();
    twin::Launch().Barrier("SyncAll");
    core.gm_log.NextInterval();  // every core's GM accesses before it are ordered before what follows
    twin::OnSyncAllLeave();
}

// Software form: flags in gmWorkspace (at least GetBlockNum() x 32 bytes, zeroed before the launch),
// one 32-byte slot per core, counting the SyncAll calls; ubWorkspace (at least GetBlockNum() x 32
// bytes) stages the flag. The twin supports usedCores = 0 (all cores) or GetBlockNum().
template <bool isAIVOnly = true>
void SyncAll(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace, int32_t usedCores = 0)
{
    const char *call = "SyncAll";
    twin::CoreState &core = twin::Core();
    const uint32_t n = core.block_num, slot = twin::kUbBlockBytes / sizeof(int32_t);
    TWIN_CHECK(usedCores >= 0 && uint32_t(usedCores) <= n, call, "usedCores must be in [0, GetBlockNum()] (got ",
               usedCores, ", block num ", n, ")");
    TWIN_CHECK(usedCores == 0 || uint32_t(usedCores) == n, call, "the twin's software SyncAll synchronises all cores: "
               "usedCores must be 0 or GetBlockNum() (got ", usedCores, ")");
    ubWorkspace.Check(call);
    TWIN_CHECK(uint64_t(ubWorkspace.GetSize()) * sizeof(int32_t) >= uint64_t(n) * twin::kUbBlockBytes, call,
               "ubWorkspace must hold at least block num x 32 bytes (", ubWorkspace.GetSize() * sizeof(int32_t),
               " bytes < ", n * twin::kUbBlockBytes, ")");
    TWIN_CHECK(gmWorkspace.GetSize() >= uint64_t(n) * slot, call, "gmWorkspace must hold at least block num x 32 bytes (",
               gmWorkspace.GetSize() * sizeof(int32_t), " bytes < ", n * twin::kUbBlockBytes, ")");
    int32_t *flags = gmWorkspace.GetPhyAddr();
    twin::CheckGm(call, flags, uint64_t(n) * twin::kUbBlockBytes);
    // Other cores read these flags concurrently, as on the NPU: atomic word accesses.
    const int32_t mine = __atomic_load_n(&flags[core.block_idx * slot], __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&flags[core.block_idx * slot], mine, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < slot; ++i) {
        ubWorkspace.SetValue(i, mine);
    }
    SyncAll<isAIVOnly>();
    for (uint32_t c = 0; c < n; ++c) {
        const int32_t other = __atomic_load_n(&flags[c * slot], __ATOMIC_RELAXED);  // a faster core may be one ahead
        TWIN_CHECK(other == mine || other == mine + 1, call, "gmWorkspace must be zeroed before the launch and used "
                   "only by SyncAll (core ", c, "'s flag is ", other, ", expected ", mine, ")");
    }
}

}  // namespace AscendC
