// SPDX-License-Identifier: BSD-3-Clause
// TPipe, the allocator of the Unified Buffer: InitBuffer carves a TQue's or a TBuf's buffers (all of
// them fit the UB, at most 64 per kernel), Reset takes them back, Destroy ends
// the kernel's use of UB (every queue buffer freed by then). Its event ids: 8 per hardware event,
// taken by EnQue (until DeQue), FreeTensor (until the buffer's next AllocTensor) and AllocEventID
// (until ReleaseEventID). A fresh buffer holds whatever its last user left: poison.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "memory.h"
#include "sync.h"

namespace twin {

inline void BarrierAllPipes();  // sync.h: what PipeBarrier<PIPE_ALL> does

inline constexpr uint32_t kMaxBuffers = 64;  // buffers per kernel (all TQue and TBuf together)

// What TPipe needs from the TQue and TBuf it carved buffers for, so Reset can take them back.
class BufferOwner {
public:
    virtual void ReleaseBuffers() = 0;
    virtual void CheckAllFreed() const = 0;  // kernel-exit rule, reported through DeferError

protected:
    ~BufferOwner() = default;
};

inline bool Unwinding() { return std::uncaught_exceptions() > 0; }

// The event ids of one TPipe: kEventIds per hardware event, each free or held by a queue (its EnQue
// or FreeTensor) or by AllocEventID (holder nullptr). Ids are handed out lowest free first.
class EventPool {
public:
    // The lowest free id of `evt`, or -1 when all are held.
    int Lowest(AscendC::HardEvent evt) const
    {
        for (uint32_t id = 0; id < kEventIds; ++id) {
            if (!At(evt, id).held) {
                return int(id);
            }
        }
        return -1;
    }
    // Takes the lowest free id of `evt` for `holder`; `who` names it and `why` says what holds ids.
    int Take(const char *call, AscendC::HardEvent evt, const void *holder, const std::string &who, const char *why)
    {
        const int id = Lowest(evt);
        if (id < 0) {
            const uint32_t mine = Count(evt, holder), explicit_ids = Count(evt, nullptr);
            const std::string others = holder == nullptr ? Cat(kEventIds - mine, " by queues")
                                                         : Cat(kEventIds - mine - explicit_ids, " by other queues, ",
                                                               explicit_ids, " by AllocEventID");
            Fail(call, Cat("at most ", kEventIds, " event ids of HardEvent::", EventName(evt),
                           " per TPipe may be in flight (QUE_MAX_EVENT); ", why, " (", kEventIds, " in flight: ", mine,
                           " held by ", who, ", ", others, ")"));
        }
        At(evt, uint32_t(id)) = {true, holder};
        return id;
    }
    void Give(AscendC::HardEvent evt, int id) { At(evt, uint32_t(id)) = {}; }
    // True when `id` of `evt` is held, by `holder` when one is given.
    bool HeldBy(AscendC::HardEvent evt, int id, const void *holder) const
    {
        return At(evt, uint32_t(id)).held && At(evt, uint32_t(id)).holder == holder;
    }
    bool IsHeld(AscendC::HardEvent evt, int id) const { return At(evt, uint32_t(id)).held; }
    void Clear() { *this = EventPool(); }

private:
    struct Entry {
        bool held = false;
        const void *holder = nullptr;
    };
    Entry &At(AscendC::HardEvent evt, uint32_t id) { return ids_[(int(evt) >> 4) * 4 + (int(evt) & 0xF)][id]; }
    const Entry &At(AscendC::HardEvent evt, uint32_t id) const
    {
        return ids_[(int(evt) >> 4) * 4 + (int(evt) & 0xF)][id];
    }
    uint32_t Count(AscendC::HardEvent evt, const void *holder) const
    {
        uint32_t n = 0;
        for (uint32_t id = 0; id < kEventIds; ++id) n += At(evt, id).held && At(evt, id).holder == holder;
        return n;
    }

    Entry ids_[PipeSync::kPipes * PipeSync::kPipes][kEventIds];
};

// A kernel-exit rule broken inside a destructor: keep the first one for the launcher to report.
inline void DeferError(const char *call, const std::string &rule)
{
    if (g_core != nullptr && g_core->deferred_error.empty()) {
        g_core->deferred_error = Cat("core ", g_core->block_idx, ": ", call, ": ", rule);
    }
}

}  // namespace twin

namespace AscendC {

template <TPosition pos = TPosition::LCM>  // the default position of the real TBuf
class TBuf;

class TPipe;
namespace detail {
inline thread_local TPipe *g_pipe = nullptr;  // the core's TPipe (cores are threads): GetTPipePtr
}
inline TPipe *GetTPipePtr() { return detail::g_pipe; }

class TPipe {
public:
    TPipe() { detail::g_pipe = this; }
    TPipe(const TPipe &) = delete;
    TPipe &operator=(const TPipe &) = delete;
    ~TPipe()
    {
        if (!twin::Unwinding() && twin::g_core != nullptr) {
            twin::CheckFlagsAtExit();
        }
        Destroy();
        if (detail::g_pipe == this) {
            detail::g_pipe = nullptr;
        }
    }

    // `num` buffers of `len` bytes each (len rounded up to 32 B) for a TQue.
    template <class Que>
    bool InitBuffer(Que &que, uint8_t num, uint32_t len)
    {
        TWIN_CHECK(num >= 1, "TPipe::InitBuffer", "a queue needs at least one buffer (num ", int(num), ")");
        TWIN_CHECK(len >= 1, "TPipe::InitBuffer", "buffer length must be at least 1 byte (len 0)");
        que.AttachBuffers(Carve(num, len, "TQue"), num, this);
        owners_.push_back(&que);
        return true;
    }

    // One scratch buffer of `len` bytes (rounded up to 32 B) for a TBuf.
    template <TPosition pos>
    bool InitBuffer(TBuf<pos> &buf, uint32_t len)
    {
        TWIN_CHECK(len >= 1, "TPipe::InitBuffer", "buffer length must be at least 1 byte (len 0)");
        buf.AttachBuffers(Carve(1, len, "TBuf"), 1, this);
        owners_.push_back(&buf);
        return true;
    }

    // Takes every buffer back: the queues and TBufs need InitBuffer again; old tensors become stale.
    void Reset()
    {
        for (twin::BufferOwner *owner : owners_) {
            owner->ReleaseBuffers();
        }
        owners_.clear();
        used_bytes_ = 0;
        buffers_ = 0;
        events_.Clear();  // as the real Reset: the free buffers' ids are waited for, the pool starts empty
    }
    // The end of the kernel's use of UB: every queue buffer must be back by now. As CANN's, it ends
    // in a PipeBarrier<PIPE_ALL> (so a second TPipe's copies are ordered after the first's).
    void Destroy()
    {
        if (!twin::Unwinding()) {
            for (twin::BufferOwner *owner : owners_) {
                owner->CheckAllFreed();
            }
        }
        Reset();
        if (!twin::Unwinding() && twin::g_core != nullptr) {
            twin::BarrierAllPipes();
        }
    }

    // Event ids for SetFlag/WaitFlag, from the same pool the queues take theirs from. AllocEventID
    // holds the lowest free id until ReleaseEventID; FetchEventID only tells which one that is.
    template <HardEvent evt>
    TEventID AllocEventID()
    {
        return TEventID(events_.Take("TPipe::AllocEventID", evt, nullptr, "AllocEventID",
                                     "each AllocEventID holds one until its ReleaseEventID"));
    }
    template <HardEvent evt>
    void ReleaseEventID(TEventID id)
    {
        TWIN_CHECK(id >= 0 && uint32_t(id) < twin::kEventIds, "TPipe::ReleaseEventID", "the event id must be in [0, ",
                   twin::kEventIds, ") (got ", int(id), ")");
        TWIN_CHECK(events_.HeldBy(evt, id, nullptr), "TPipe::ReleaseEventID",
                   "the id must be one AllocEventID handed out and not yet released (HardEvent::", twin::EventName(evt),
                   ", event id ", int(id), ", ", events_.IsHeld(evt, id) ? "held by a queue" : "not held",
                   "; stricter than CANN, which clears the id silently)");
        events_.Give(evt, id);
    }
    TEventID FetchEventID(HardEvent evt)
    {
        const int id = events_.Lowest(evt);
        TWIN_CHECK(id >= 0, "TPipe::FetchEventID", "a free event id is needed, at most ", twin::kEventIds,
                   " of HardEvent::", twin::EventName(evt), " per TPipe (all ", twin::kEventIds,
                   " held by queues or AllocEventID)");
        return TEventID(id);
    }
    template <HardEvent evt>
    TEventID FetchEventID() { return FetchEventID(evt); }

    // ---- twin internals ----
    twin::EventPool &Events() { return events_; }
    const twin::EventPool &Events() const { return events_; }
    // The UB address just past the last buffer InitBuffer carved: where CANN's stack buffer
    // (PopStackBuffer, InitOutput) starts.
    template <TPosition pos>
    uint64_t GetQueueEndAddress() const
    {
        return used_bytes_;
    }
    void Forget(twin::BufferOwner *owner)
    {
        for (auto &o : owners_) {
            if (o == owner) {
                o = owners_.back();
                owners_.pop_back();
                return;
            }
        }
    }

private:
    // `num` 32-byte aligned buffers of `len` bytes (rounded up to 32), appended after the last ones.
    std::unique_ptr<twin::BufferSlot[]> Carve(uint8_t num, uint32_t len, const char *owner)
    {
        twin::CoreState &core = twin::Core();
        const uint32_t bytes = (len + twin::kUbBlockBytes - 1) / twin::kUbBlockBytes * twin::kUbBlockBytes;
        TWIN_CHECK(buffers_ + num <= twin::kMaxBuffers, "TPipe::InitBuffer", "at most ", twin::kMaxBuffers,
                   " buffers per kernel (", buffers_, " already, ", int(num), " more asked)");
        const uint64_t total = uint64_t(used_bytes_) + uint64_t(num) * bytes;
        TWIN_CHECK(total <= core.ub_usable, "TPipe::InitBuffer",
                   "all buffers must fit the Unified Buffer (buffers total ", total, " bytes > limit ",
                   core.ub_usable, " bytes on ", core.soc->name, ")");
        std::unique_ptr<twin::BufferSlot[]> slots(new twin::BufferSlot[num]);
        for (uint32_t i = 0; i < num; ++i) {
            slots[i].offset = used_bytes_ + i * bytes;
            slots[i].bytes = bytes;
            slots[i].owner = owner;
            core.MarkUndefined(slots[i].offset, bytes);
        }
        used_bytes_ = uint32_t(total);
        core.counters.ub_peak_bytes = std::max<uint64_t>(core.counters.ub_peak_bytes, total);
        buffers_ += num;
        return slots;
    }
    std::vector<twin::BufferOwner *> owners_;
    uint32_t used_bytes_ = 0;
    uint32_t buffers_ = 0;
    twin::EventPool events_;
};

}  // namespace AscendC

namespace twin {

inline bool QueueHoldsEventId(AscendC::HardEvent evt, int32_t id)
{
    const AscendC::TPipe *pipe = AscendC::GetTPipePtr();
    return pipe != nullptr && pipe->Events().IsHeld(evt, id) && !pipe->Events().HeldBy(evt, id, nullptr);
}

}  // namespace twin
