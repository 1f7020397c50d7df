// SPDX-License-Identifier: BSD-3-Clause
// Synchronisation of cores through GM flags that the API itself manages: IBSet / IBWait (one core
// tells another that its earlier work is done) and InitDetermineComputeWorkspace / WaitPreBlock /
// NotifyNextBlock (the cores take turns in block order, e.g. for atomic adds in a fixed order). Each
// call starts and ends with PipeBarrier<PIPE_ALL>, as the real implementation does, so everything the
// core did before a set or notify is done when the flag is written: the flag write publishes it and
// the wait that sees the flag acquires it (the cross-core order of gm_order.h). A wait that no core
// can satisfy any more (every other core returned or waits too) is a rule error where the NPU would hang.
// Timeline cost (assumption: no public figure): the two barriers and one 32-byte copy each way per
// call; a wait ends a scalar GM round trip after the flag it waited for was written (timeline.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "core.h"
#include "launch.h"
#include "memory.h"
#include "sync.h"

namespace twin {

inline constexpr uint32_t kFlagSlotInts = kUbBlockBytes / sizeof(int32_t);  // one 32-byte flag slot

// Polls until done() holds; fails with `rule` once no core can write a flag any more. Each look
// happens under the timeline's arbiter (timeline.h), which prices the wait: the core goes on from
// the latest write of the flags done() acquired (`written`), as the timeline reads them.
template <typename Done, typename Written>
void PollFlags(const char *call, const char *rule, Done done, Written written)
{
    LaunchState &launch = Launch();
    CoreState &core = Core();
    const uint32_t me = core.block_idx;
    for (;;) {
        const uint64_t seen = launch.gm_flags.Writes();
        if (launch.timeline.FlagPoll(me, core.timeline.IssuePoint(), done)) {
            launch.PollDone(me);
            core.timeline.FlagSeen(written());
            return;
        }
        TWIN_CHECK(!launch.PollStuck(me, seen), call, rule, " (every other core returned or waits too; the NPU "
                   "would hang)");
        std::this_thread::yield();
    }
}

// The GM flag slot at `gm`, read whole; what its last flag write published is acquired by the caller
// when the value is the one it waits for.
inline GmClock ReadSlot(const char *call, int32_t *gm, int32_t (&value)[kFlagSlotInts])
{
    CoreState &core = Core();
    core.gm_log.Record(call, gm, 1, kUbBlockBytes, kUbBlockBytes, GmAccess::kFlagRead);
    return Launch().gm_flags.Read(gm, value, kUbBlockBytes);
}

inline void WriteSlot(const char *call, int32_t *gm, const int32_t (&value)[kFlagSlotInts])
{
    CoreState &core = Core();
    core.gm_log.Record(call, gm, 1, kUbBlockBytes, kUbBlockBytes, GmAccess::kFlagWrite);
    Launch().timeline.FlagWrite(gm, core.timeline.End(),
                                [&] { Launch().gm_flags.Write(gm, value, kUbBlockBytes, core.gm_log.Released()); });
    core.gm_log.Wrote(gm, 1, kUbBlockBytes, kUbBlockBytes, value, kUbBlockBytes);
}

// The UB workspace holds what the call last moved through it; the scalar unit writes it between the
// call's two barriers.
inline void StageUb(const char *call, const AscendC::LocalTensor<int32_t> &ub, uint32_t at, const int32_t *src, uint32_t n)
{
    PipeAccess(call, ub.Slot(), Pipe::S, true);
    std::memcpy(ub.Data() + at, src, n * sizeof(int32_t));
    Core().MarkDefined(ub.ByteOffset() + at * sizeof(int32_t), n * sizeof(int32_t));
}

// The start of every call: all earlier work of the core done, and published by the next flag write.
inline void BeginFlagCall()
{
    AscendC::PipeBarrier<AscendC::PIPE_ALL>();
    Core().gm_log.Release();
    OnCopyIn(kUbBlockBytes);
}
inline void EndFlagCall()
{
    OnCopyOut(kUbBlockBytes);
    AscendC::PipeBarrier<AscendC::PIPE_ALL>();
}

// IBSet and IBWait: the slot of (blockIdx, eventID) goes 0 -> 1 (IBSet, which waits for 0) and back
// 1 -> 0 (IBWait, which waits for 1).
template <bool isAIVOnly>
void SetOrWait(const char *call, const AscendC::GlobalTensor<int32_t> &gm, const AscendC::LocalTensor<int32_t> &ub,
               int32_t blockIdx, int32_t eventID, int32_t from)
{
    CoreState &core = Core();
    const int64_t cores = int64_t(core.block_num) * (isAIVOnly ? 1 : 2);
    TWIN_CHECK(blockIdx >= 0 && blockIdx < int64_t(core.block_num), call, "blockIdx must be in [0, GetBlockNum() - 1] (got ",
               blockIdx, ", block num ", core.block_num, ")");
    TWIN_CHECK(eventID >= 0, call, "eventID must not be negative (got ", eventID, ")");
    ub.Check(call);
    TWIN_CHECK(ub.GetSize() >= kFlagSlotInts, call, "ubWorkspace must hold at least 32 bytes (",
               ub.GetSize() * sizeof(int32_t), " bytes)");
    const uint64_t at = uint64_t(cores) * kFlagSlotInts * uint64_t(eventID) + uint64_t(blockIdx) * kFlagSlotInts;
    TWIN_CHECK(gm.GetSize() >= at + kFlagSlotInts, call, "gmWorkspace must hold at least cores x 32 bytes x eventID + "
               "blockIdx x 32 bytes + 32 bytes (", gm.GetSize() * sizeof(int32_t), " bytes < ",
               (at + kFlagSlotInts) * sizeof(int32_t), ")");
    int32_t *slot = gm.GetPhyAddr() + at;
    CheckGm(call, slot, kUbBlockBytes);
    BeginFlagCall();
    int32_t value[kFlagSlotInts];
    PollFlags(call, from == 0 ? "an IBSet waits until the IBWait of its previous IBSet reset the flag"
                              : "an IBWait needs an IBSet with the same gmWorkspace, blockIdx and eventID",
              [&] {
                  const GmClock seen = ReadSlot(call, slot, value);
                  if (value[0] != from) return false;
                  core.gm_log.Acquire(seen);
                  return true;
              },
              [&] { return Launch().timeline.FlagTime(slot); });
    value[0] = 1 - from;
    StageUb(call, ub, 0, value, kFlagSlotInts);
    WriteSlot(call, slot, value);
    EndFlagCall();
}

// WaitPreBlock / NotifyNextBlock: slot i of the workspace holds the round core i finished (0: none
// this round); the round counter lives in the core's UB workspace after the slots.
inline void CheckTurnWorkspaces(const char *call, const AscendC::GlobalTensor<int32_t> &gm,
                                const AscendC::LocalTensor<int32_t> &ub)
{
    const uint32_t n = Core().block_num;
    ub.Check(call);
    TWIN_CHECK(ub.GetSize() >= (n + 1) * kFlagSlotInts, call, "ubWorkspace must hold at least GetBlockNum() x 32 + 32 "
               "bytes (", ub.GetSize() * sizeof(int32_t), " bytes < ", (n + 1) * kUbBlockBytes, ")");
    TWIN_CHECK(gm.GetSize() >= uint64_t(n) * kFlagSlotInts, call, "gmWorkspace must hold at least GetBlockNum() x 32 "
               "bytes (", gm.GetSize() * sizeof(int32_t), " bytes < ", n * kUbBlockBytes, ")");
    CheckGm(call, gm.GetPhyAddr(), uint64_t(n) * kUbBlockBytes);
}

// The start of WaitPreBlock and NotifyNextBlock: the workspaces checked, the round this core is in.
inline int32_t BeginTurn(const char *call, const AscendC::GlobalTensor<int32_t> &gm,
                         const AscendC::LocalTensor<int32_t> &ub)
{
    CheckTurnWorkspaces(call, gm, ub);
    const uint32_t at = Core().block_num * kFlagSlotInts;
    TWIN_CHECK(Core().AllDefined(ub.ByteOffset() + at * sizeof(int32_t), sizeof(int32_t)), call,
               "InitDetermineComputeWorkspace must come first (the ubWorkspace holds no round count)");
    BeginFlagCall();
    return ub.Data()[at];
}

// Slot c of the turn workspace set to `value`, staged through the UB workspace as CANN's code does.
inline void SetTurnSlot(const char *call, const AscendC::GlobalTensor<int32_t> &gm,
                        const AscendC::LocalTensor<int32_t> &ub, uint32_t c, const int32_t (&value)[kFlagSlotInts])
{
    StageUb(call, ub, c * kFlagSlotInts, value, kFlagSlotInts);
    WriteSlot(call, gm.GetPhyAddr() + c * kFlagSlotInts, value);
}

}  // namespace twin

namespace AscendC {

template <bool isAIVOnly = true>
void IBSet(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace, int32_t blockIdx,
           int32_t eventID)
{
    twin::SetOrWait<isAIVOnly>("IBSet", gmWorkspace, ubWorkspace, blockIdx, eventID, 0);
}

template <bool isAIVOnly = true>
void IBWait(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace, int32_t blockIdx,
            int32_t eventID)
{
    twin::SetOrWait<isAIVOnly>("IBWait", gmWorkspace, ubWorkspace, blockIdx, eventID, 1);
}

// Core 0 clears the slots (the workspace need not be zeroed beforehand); every core starts round 1.
inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace)
{
    const char *call = "InitDetermineComputeWorkspace";
    twin::CheckTurnWorkspaces(call, gmWorkspace, ubWorkspace);
    twin::BeginFlagCall();
    const uint32_t n = twin::Core().block_num;
    const int32_t zero[twin::kFlagSlotInts] = {}, one = 1;
    if (twin::Core().block_idx == 0) {
        for (uint32_t c = 0; c < n; ++c) twin::SetTurnSlot(call, gmWorkspace, ubWorkspace, c, zero);
    }
    twin::StageUb(call, ubWorkspace, n * twin::kFlagSlotInts, &one, 1);
    twin::EndFlagCall();
}

// Waits until cores 0 .. i-1 finished this round and cores i .. n-1 did not (core i = this core). The
// zeros count as much as the rounds: core 0 goes on from the last core's clearing of the round before.
inline void WaitPreBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace)
{
    const char *call = "WaitPreBlock";
    const int32_t round = twin::BeginTurn(call, gmWorkspace, ubWorkspace);
    const uint32_t n = twin::Core().block_num, me = twin::Core().block_idx;
    std::vector<twin::GmClock> seen(n);
    std::vector<int32_t> slots(n * twin::kFlagSlotInts);
    twin::PollFlags(call, "every WaitPreBlock needs the NotifyNextBlock of the core before it in the same round", [&] {
        bool turn = true;
        for (uint32_t c = 0; c < n; ++c) {
            int32_t value[twin::kFlagSlotInts];
            seen[c] = twin::ReadSlot(call, gmWorkspace.GetPhyAddr() + c * twin::kFlagSlotInts, value);
            std::memcpy(&slots[c * twin::kFlagSlotInts], value, sizeof(value));
            turn = turn && value[0] == (c < me ? round : 0);
        }
        return turn;
    }, [&] {
        double t = 0;
        for (uint32_t c = 0; c < n; ++c) t = std::max(t, twin::Launch().timeline.FlagTime(gmWorkspace.GetPhyAddr() + c * twin::kFlagSlotInts));
        return t;
    });
    for (const twin::GmClock &clock : seen) twin::Core().gm_log.Acquire(clock);
    twin::StageUb(call, ubWorkspace, 0, slots.data(), n * twin::kFlagSlotInts);
    twin::EndFlagCall();
}

// Marks this core's round done; the last core clears every slot for the next round.
inline void NotifyNextBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace)
{
    const char *call = "NotifyNextBlock";
    const int32_t round = twin::BeginTurn(call, gmWorkspace, ubWorkspace);
    const uint32_t n = twin::Core().block_num, me = twin::Core().block_idx;
    int32_t value[twin::kFlagSlotInts];
    for (int32_t &v : value) v = me + 1 == n ? 0 : round;
    for (uint32_t c = me + 1 == n ? 0 : me; c <= me; ++c) twin::SetTurnSlot(call, gmWorkspace, ubWorkspace, c, value);
    const int32_t next = round + 1;
    twin::StageUb(call, ubWorkspace, n * twin::kFlagSlotInts, &next, 1);
    twin::EndFlagCall();
}

}  // namespace AscendC
