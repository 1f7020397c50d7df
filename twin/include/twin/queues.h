// SPDX-License-Identifier: BSD-3-Clause
// TQue and TQueBind: buffers handed between pipes in FIFO order. Rules guarded here: AllocTensor only
// while a buffer is free, at most `depth` tensors queued before a DeQue, no DeQue of an empty queue,
// EnQue once per AllocTensor or DeQue, FreeTensor once, only to the owning queue and not while queued,
// every buffer freed by kernel exit; each EnQue and FreeTensor holds one of the TPipe's event ids.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tpipe.h"

namespace AscendC {

// A queue buffer as a handle: its UB address.
using TBufHandle = uint8_t *;


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
        slot->generation++;  // tensors of the buffer's earlier owners are stale from here on
        // The buffer keeps its bytes (and their definedness), as on the NPU: CANN's add_rms_norm
        // reads through a fresh AllocTensor of its one-buffer queue what it wrote there before.
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

    // The untyped form hands back the buffer's handle (its UB address); kernels call it to consume
    // a queued tensor they already hold.
    TBufHandle DeQue() { return reinterpret_cast<TBufHandle>(uintptr_t(DeQue<uint8_t>().ByteOffset())); }

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

}  // namespace AscendC
