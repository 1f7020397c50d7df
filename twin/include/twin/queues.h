// Buffers of the Unified Buffer: TPipe (the allocator), TQue (buffers handed between pipes in FIFO
// order) and TBuf (scratch). Rules guarded here: all buffers fit the UB less its reserved part, at most
// 64 buffers per kernel, queue discipline (alloc only while a buffer is free, at most `depth` tensors
// queued before a DeQue, no DeQue of an empty queue, FreeTensor once and only to the owning queue,
// every queue buffer freed by kernel exit). A fresh buffer holds whatever its last user left: poison.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "memory.h"
#include "sync.h"

namespace twin {

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
    }
    // The end of the kernel's use of UB: every queue buffer must be back by now.
    void Destroy()
    {
        if (!twin::Unwinding()) {
            for (twin::BufferOwner *owner : owners_) {
                owner->CheckAllFreed();
            }
        }
        Reset();
    }

    // Event ids for SetFlag/WaitFlag. The twin tracks flags per (event, id), so any id in range works.
    template <HardEvent evt>
    TEventID AllocEventID() { return NextEventId(); }
    template <HardEvent evt>
    void ReleaseEventID(TEventID) {}
    TEventID FetchEventID(HardEvent) { return NextEventId(); }
    template <HardEvent evt>
    TEventID FetchEventID() { return NextEventId(); }

    // ---- twin internals ----
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
                   core.soc->ub_reserved_bytes, " reserved on ", core.soc->name, ")");
        std::unique_ptr<twin::BufferSlot[]> slots(new twin::BufferSlot[num]);
        for (uint32_t i = 0; i < num; ++i) {
            slots[i].offset = used_bytes_ + i * bytes;
            slots[i].bytes = bytes;
            slots[i].owner = owner;
            core.MarkUndefined(slots[i].offset, bytes);
        }
        used_bytes_ = uint32_t(total);
        buffers_ += num;
        return slots;
    }
    TEventID NextEventId() { return TEventID(next_event_++ % twin::kEventIds); }

    std::vector<twin::BufferOwner *> owners_;
    uint32_t used_bytes_ = 0;
    uint32_t buffers_ = 0;
    uint32_t next_event_ = 0;
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

    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        twin::BufferSlot *slot = nullptr;
        for (uint32_t i = 0; i < num_ && slot == nullptr; ++i) {
            if (slots_[i].state == twin::BufferSlot::State::Free) {
                slot = &slots_[i];
            }
        }
        TWIN_CHECK(num_ > 0, "TQue::AllocTensor", "the queue has no buffers (call TPipe::InitBuffer first)");
        TWIN_CHECK(slot != nullptr, "TQue::AllocTensor", "all ", num_,
                   " buffers of the queue are in use (FreeTensor one before the next AllocTensor)");
        slot->state = twin::BufferSlot::State::Allocated;
        twin::Core().MarkUndefined(slot->offset, slot->bytes);
        Synced(slot);
        Receive(slot, kProducer);  // waits for the consumer's FreeTensor
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
        Receive(slot, kConsumer);  // waits for the producer's EnQue
        twin::OnDeQue(slot, kConsumer);
        return LocalTensor<T>(slot, slot->offset, slot->bytes / sizeof(T));
    }

    template <typename T>
    void FreeTensor(const LocalTensor<T> &tensor)
    {
        twin::BufferSlot *slot = tensor.Slot();
        TWIN_CHECK(slot != nullptr && Owns(slot), "TQue::FreeTensor",
                   "the tensor must come from this queue's AllocTensor");
        TWIN_CHECK(slot->state != twin::BufferSlot::State::Free, "TQue::FreeTensor",
                   "the tensor was already freed (FreeTensor twice)");
        tensor.Check("TQue::FreeTensor");
        TWIN_CHECK(slot->state != twin::BufferSlot::State::Queued, "TQue::FreeTensor",
                   "the tensor is still queued (DeQue it before FreeTensor)");
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
        handoff_.reset(new twin::Handoff[num]());
        num_ = num;
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
        num_ = head_ = count_ = 0;
        pipe_ = nullptr;
    }

private:
    // The pipe that fills a buffer of this queue and the one that uses it.
    static constexpr twin::Pipe kProducer =
        src == TPosition::GM || src == TPosition::VECIN ? twin::Pipe::MTE2 : twin::Pipe::V;
    static constexpr twin::Pipe kConsumer =
        dst == TPosition::GM || dst == TPosition::VECOUT ? twin::Pipe::MTE3 : twin::Pipe::V;

    bool Owns(const twin::BufferSlot *slot) const { return slot >= slots_.get() && slot < slots_.get() + num_; }
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
    std::unique_ptr<twin::Handoff[]> handoff_;  // per buffer: what its last EnQue / FreeTensor passed on
    uint32_t num_ = 0, head_ = 0, count_ = 0;
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
