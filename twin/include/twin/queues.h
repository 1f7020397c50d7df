// Buffers of the Unified Buffer: TPipe (the allocator), TQue (buffers handed between pipes in FIFO
// order) and TBuf (scratch). Rules guarded here: all buffers fit the UB less its reserved part, at most
// 64 buffers per kernel, queue discipline (alloc only while a buffer is free, at most `depth` tensors
// queued before a DeQue, no DeQue of an empty queue, FreeTensor once and only to the owning queue,
// every queue buffer freed by kernel exit), and the TPipe's event ids: 8 per hardware event, taken by
// EnQue (until DeQue), FreeTensor (until the buffer's next AllocTensor) and AllocEventID (until
// ReleaseEventID). A fresh buffer holds whatever its last user left: poison.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
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
                   "all buffers must fit the Unified Buffer less its reserved part (buffers total ", total,
                   " bytes > limit ", core.ub_usable, " bytes = ", core.soc->ub_bytes, " - ",
                   core.soc->ub_reserved_bytes, " reserved on ", core.soc->name,
                   "; stricter than CANN's CPU debug, which checks the whole UB)");
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

// Buffers handed from one pipe to the next: AllocTensor -> fill -> EnQue -> DeQue -> use -> FreeTensor.
// `depth` is how many tensors may sit in the queue before a DeQue.
// TQueBind<src, dst>: the queue's EnQue/DeQue order the pipe that writes at `src` before the pipe that
// reads at `dst` (GM -> VECIN: MTE2 then V; VECOUT -> GM: V then MTE3; VECIN -> VECOUT: MTE2 then
// MTE3, a copy through UB without vector work); FreeTensor/AllocTensor order them the other way.
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind : public twin::BufferOwner {
public:
    TQueBind() = default;
    TQueBind(const TQueBind &) = delete;
    TQueBind &operator=(const TQueBind &) = delete;
    ~TQueBind()
    {
        if (!twin::Unwinding()) {
            CheckAllFreed();
        }
        if (pipe_ != nullptr) {
            pipe_->Forget(this);
        }
    }

    // The next free buffer in turn from where the last search stopped, as the real queue's cursor.
    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        TWIN_CHECK(num_ > 0, "TQue::AllocTensor", "the queue has no buffers (call TPipe::InitBuffer first)");
        twin::BufferSlot *slot = nullptr;
        for (uint32_t i = 0; i < num_ && slot == nullptr; ++i) {
            if (slots_[cursor_].state == twin::BufferSlot::State::Free) {
                slot = &slots_[cursor_];
            }
            cursor_ = (cursor_ + 1) % num_;
        }
        TWIN_CHECK(slot != nullptr, "TQue::AllocTensor", "all ", num_,
                   " buffers of the queue are in use (FreeTensor one before the next AllocTensor)");
        slot->state = twin::BufferSlot::State::Allocated;
        twin::Core().MarkUndefined(slot->offset, slot->bytes);
        Synced(slot);
        Receive(slot, kProducer);  // waits for the consumer's FreeTensor, and gives its event id back
        GiveId(kFreeEvent, free_id_[Index(slot)]);
        twin::OnAllocTensor(this, slot, num_, kProducer);
        return LocalTensor<T>(slot, slot->offset, slot->bytes / sizeof(T));
    }

    template <typename T>
    bool EnQue(const LocalTensor<T> &tensor)
    {
        tensor.Check("TQue::EnQue");
        TWIN_CHECK(Owns(tensor.Slot()), "TQue::EnQue", "the tensor must come from this queue's AllocTensor");
        TWIN_CHECK(tensor.Slot()->state == twin::BufferSlot::State::Allocated, "TQue::EnQue",
                   "the tensor is already queued (EnQue once per AllocTensor or DeQue)");
        TWIN_CHECK(count_ < uint32_t(depth), "TQue::EnQue", "at most depth = ", depth,
                   " tensors may be queued before a DeQue");
        enque_id_[Index(tensor.Slot())] = TakeId("TQue::EnQue", kEnQueEvent, "each EnQue holds one until its DeQue");
        tensor.Slot()->state = twin::BufferSlot::State::Queued;
        fifo_[(head_ + count_) % num_] = tensor.Slot() - slots_.get();
        count_++;
        Synced(tensor.Slot());
        Signal(tensor.Slot(), kProducer);
        twin::OnEnQue(tensor.Slot(), kProducer);
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue()
    {
        TWIN_CHECK(count_ > 0, "TQue::DeQue", "the queue is empty (EnQue a tensor before DeQue)");
        twin::BufferSlot *slot = &slots_[fifo_[head_]];
        head_ = (head_ + 1) % num_;
        count_--;
        slot->state = twin::BufferSlot::State::Allocated;
        Synced(slot);
        Receive(slot, kConsumer);  // waits for the producer's EnQue, and gives its event id back
        GiveId(kEnQueEvent, enque_id_[Index(slot)]);
        twin::OnDeQue(slot, kConsumer);
        return LocalTensor<T>(slot, slot->offset, slot->bytes / sizeof(T));
    }

    template <typename T>
    void FreeTensor(LocalTensor<T> &tensor)
    {
        twin::BufferSlot *slot = tensor.Slot();
        TWIN_CHECK(slot != nullptr && Owns(slot), "TQue::FreeTensor",
                   "the tensor must come from this queue's AllocTensor");
        TWIN_CHECK(slot->state != twin::BufferSlot::State::Free, "TQue::FreeTensor",
                   "the tensor was already freed (FreeTensor twice)");
        tensor.Check("TQue::FreeTensor");
        TWIN_CHECK(slot->state != twin::BufferSlot::State::Queued, "TQue::FreeTensor",
                   "the tensor is still queued (DeQue it before FreeTensor)");
        free_id_[Index(slot)] = TakeId("TQue::FreeTensor", kFreeEvent,
                                       "each FreeTensor holds one until its buffer's next AllocTensor");
        slot->state = twin::BufferSlot::State::Free;
        slot->generation++;
        Synced(slot);
        Signal(slot, kConsumer);
        twin::OnFreeTensor(slot, kConsumer);
    }

    // Not const in the real TQueBind either.
    bool VacantInQue() { return count_ < uint32_t(depth); }
    bool HasTensorInQue() { return count_ > 0; }
    int32_t GetTensorCountInQue() { return int32_t(count_); }

    // ---- twin internals ----
    void AttachBuffers(std::unique_ptr<twin::BufferSlot[]> slots, uint32_t num, TPipe *pipe)
    {
        TWIN_CHECK(num_ == 0, "TPipe::InitBuffer", "the queue already has buffers (TPipe::Reset before a new InitBuffer)");
        slots_ = std::move(slots);
        fifo_.assign(num, 0);
        enque_id_.assign(num, -1);
        free_id_.assign(num, -1);
        handoff_.reset(new twin::Handoff[num]());
        num_ = num;
        cursor_ = 0;
        pipe_ = pipe;
    }
    void CheckAllFreed() const override
    {
        for (uint32_t i = 0; i < num_; ++i) {
            if (slots_[i].state != twin::BufferSlot::State::Free) {
                twin::DeferError("TQue::AllocTensor", twin::Cat("every AllocTensor needs its FreeTensor before the kernel ends (buffer ",
                                                   i, " of the queue is still ",
                                                   slots_[i].state == twin::BufferSlot::State::Queued ? "queued)"
                                                                                                      : "allocated)"));
                return;
            }
        }
    }
    void ReleaseBuffers() override
    {
        for (uint32_t i = 0; i < num_; ++i) {
            slots_[i].state = twin::BufferSlot::State::Free;
            slots_[i].generation++;
        }
        retired_.push_back(std::move(slots_));  // stale tensors may still point at them
        num_ = head_ = count_ = cursor_ = 0;
        pipe_ = nullptr;
    }

private:
    // The pipe that fills a buffer of this queue and the one that uses it.
    static constexpr twin::Pipe kProducer =
        src == TPosition::GM || src == TPosition::VECIN ? twin::Pipe::MTE2 : twin::Pipe::V;
    static constexpr twin::Pipe kConsumer =
        dst == TPosition::GM || dst == TPosition::VECOUT ? twin::Pipe::MTE3 : twin::Pipe::V;

    // The events its EnQue/DeQue and FreeTensor/AllocTensor signal, as the real queue derives them from
    // the positions: producer -> consumer, and back.
    static constexpr HardEvent kEnQueEvent = HardEvent((int(kProducer) << 4) | int(kConsumer));
    static constexpr HardEvent kFreeEvent = HardEvent((int(kConsumer) << 4) | int(kProducer));

    bool Owns(const twin::BufferSlot *slot) const { return slot >= slots_.get() && slot < slots_.get() + num_; }
    uint32_t Index(const twin::BufferSlot *slot) const { return uint32_t(slot - slots_.get()); }
    int8_t TakeId(const char *call, HardEvent evt, const char *why)
    {
        const std::string who = twin::Cat("this queue (", int(depth), "-deep, ", num_, " buffers from UB offset ",
                                          slots_[0].offset, ")");
        return int8_t(pipe_->Events().Take(call, evt, this, who, why));
    }
    void GiveId(HardEvent evt, int8_t &id)
    {
        if (id >= 0) {
            pipe_->Events().Give(evt, id);
            id = -1;
        }
    }
    // AllocTensor, EnQue, DeQue and FreeTensor wait for the pipes that used the buffer, as on the NPU.
    static void Synced(twin::BufferSlot *slot) { slot->queue_sync_seq = ++twin::Core().instr_seq; }
    // And they are flags between the producer and consumer pipes (EnQue/DeQue: producer -> consumer,
    // FreeTensor/AllocTensor: consumer -> producer): everything the signalling pipe did before is
    // ordered, not only this buffer.
    void Signal(twin::BufferSlot *slot, twin::Pipe from)
    {
        twin::Signal(twin::Core(), from, handoff_[slot - slots_.get()]);
    }
    void Receive(twin::BufferSlot *slot, twin::Pipe to)
    {
        twin::Receive(twin::Core(), to, handoff_[slot - slots_.get()]);
    }

    std::unique_ptr<twin::BufferSlot[]> slots_;
    std::vector<std::unique_ptr<twin::BufferSlot[]>> retired_;
    std::vector<uint32_t> fifo_;
    std::vector<int8_t> enque_id_, free_id_;  // per buffer: the event ids its EnQue and FreeTensor hold, or -1
    std::unique_ptr<twin::Handoff[]> handoff_;  // per buffer: what its last EnQue / FreeTensor passed on
    uint32_t num_ = 0, head_ = 0, count_ = 0, cursor_ = 0;
    TPipe *pipe_ = nullptr;
};

// The usual queues: TQue<VECIN> is GM -> VECIN, TQue<VECOUT> is VECOUT -> GM.
template <TPosition pos, int32_t depth, auto mask = 0>
using TQue = TQueBind<pos == TPosition::VECOUT ? pos : TPosition::GM, pos == TPosition::VECOUT ? TPosition::GM : pos,
                      depth, mask>;

// A scratch buffer: always allocated, no queue; cross-pipe use needs SetFlag/WaitFlag (sync.h).
template <TPosition pos>
class TBuf : public twin::BufferOwner {
public:
    TBuf() = default;
    TBuf(const TBuf &) = delete;
    TBuf &operator=(const TBuf &) = delete;
    ~TBuf()
    {
        if (pipe_ != nullptr) {
            pipe_->Forget(this);
        }
    }

    template <typename T>
    LocalTensor<T> Get()
    {
        Require("TBuf::Get");
        return LocalTensor<T>(slot_.get(), slot_[0].offset, slot_[0].bytes / sizeof(T));
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t count)
    {
        Require("TBuf::Get");
        TWIN_CHECK(uint64_t(count) * sizeof(T) <= slot_[0].bytes, "TBuf::Get", "count must fit the buffer (",
                   count, " elements of ", sizeof(T), " bytes > ", slot_[0].bytes, " bytes)");
        return LocalTensor<T>(slot_.get(), slot_[0].offset, count);
    }
    // `count` elements starting `byteOffset` bytes into the buffer (32-byte aligned).
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t byteOffset)
    {
        Require("TBuf::GetWithOffset");
        TWIN_CHECK(byteOffset % twin::kUbBlockBytes == 0, "TBuf::GetWithOffset",
                   "the offset must be a multiple of 32 bytes (offset ", byteOffset, ")");
        TWIN_CHECK(uint64_t(byteOffset) + uint64_t(count) * sizeof(T) <= slot_[0].bytes, "TBuf::GetWithOffset",
                   "offset + count must fit the buffer (", byteOffset, " + ", count, " elements of ", sizeof(T),
                   " bytes > ", slot_[0].bytes, " bytes)");
        return LocalTensor<T>(slot_.get(), slot_[0].offset + byteOffset, count);
    }

    // ---- twin internals ----
    void AttachBuffers(std::unique_ptr<twin::BufferSlot[]> slots, uint32_t, TPipe *pipe)
    {
        TWIN_CHECK(slot_ == nullptr, "TPipe::InitBuffer", "the TBuf already has a buffer (TPipe::Reset before a new InitBuffer)");
        slot_ = std::move(slots);
        slot_[0].state = twin::BufferSlot::State::Allocated;
        pipe_ = pipe;
    }
    void CheckAllFreed() const override {}
    void ReleaseBuffers() override
    {
        slot_[0].state = twin::BufferSlot::State::Free;
        slot_[0].generation++;
        retired_.push_back(std::move(slot_));
        pipe_ = nullptr;
    }

private:
    void Require(const char *call) const
    {
        TWIN_CHECK(slot_ != nullptr, call, "the TBuf has no buffer (call TPipe::InitBuffer first)");
    }

    std::unique_ptr<twin::BufferSlot[]> slot_;
    std::vector<std::unique_ptr<twin::BufferSlot[]>> retired_;
    TPipe *pipe_ = nullptr;
};

}  // namespace AscendC

namespace twin {

inline bool QueueHoldsEventId(AscendC::HardEvent evt, int32_t id)
{
    const AscendC::TPipe *pipe = AscendC::GetTPipePtr();
    return pipe != nullptr && pipe->Events().IsHeld(evt, id) && !pipe->Events().HeldBy(evt, id, nullptr);
}

}  // namespace twin

