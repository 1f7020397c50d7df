// SPDX-License-Identifier: BSD-3-Clause
// The long-rows path's ring store: rows too long for spare row buffers stream in through two rings of
// chunk slots (one for dy, one for x). Each slot is refilled with the next chunk the ring has not yet
// received as soon as pass 2 is done with it, and pass 1 of the next row takes it once it has landed.
// The slots are plain buffers ordered by flags, not queue buffers: a queued or freed queue buffer
// holds one of the TPipe's 8 event ids of its event, and a ring holds up to kMaxRowSlots. A chunk's x
// lands before its dy, so one MTE2_V flag per dy chunk tells pass 1 both have landed; at most
// kRingLandings such flags are pending (beyond that the vector unit waits for the oldest).
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

// MTE2_V event ids the ring holds for its landings: the TPipe's 8 less one for WaitFor<MTE2_V>.
constexpr uint32_t kRingLandings = kEventIdsPerEvent - 1;

template <typename T>
class LongRowsRings {
public:
    // `slots` slots of `chunkBytes` per ring, filled from the rows of dy and x (cols each) in chunks
    // of chunkCols; `landings` (at most kRingLandings) MTE2_V ids for them, the rest left to the caller.
    __aicore__ inline void Init(TPipe *pipe, const OperatorGm<T> &gm, uint32_t slots, uint32_t chunkBytes,
                                uint32_t cols, uint32_t chunkCols, uint32_t landings)
    {
        landings_ = landings;
        pipe_ = pipe;
        dyGm_ = gm.dy;
        xGm_ = gm.x;
        dxGm_ = gm.dx;
        dxLeft_ = pipe_->AllocEventID<HardEvent::MTE3_MTE2>();
        slots_ = slots;
        cols_ = cols;
        chunkCols_ = chunkCols;
        for (uint32_t i = 0; i < slots_; ++i) {
            pipe_->InitBuffer(dy_.slot[i], chunkBytes);
            pipe_->InitBuffer(x_.slot[i], chunkBytes);
        }
        for (uint32_t i = 0; i < landings_; ++i) {
            landed_[i] = pipe_->AllocEventID<HardEvent::MTE2_V>();
        }
    }
    __aicore__ inline void Release()
    {
        for (uint32_t i = 0; i < landings_; ++i) {
            pipe_->ReleaseEventID<HardEvent::MTE2_V>(landed_[i]);
        }
    }

    // The rings receive the rows [begin, end) next.
    __aicore__ inline void Start(uint64_t begin, uint64_t end)
    {
        dy_.fill = {begin, end, 0};
        x_.fill = dy_.fill;
    }
    __aicore__ inline uint32_t Slots() const { return slots_; }

    // x's next chunk lands once the vector unit is done with its slot.
    __aicore__ inline void RefillX() { Refill(x_, xGm_, true, false); }
    // dy's next chunk lands once the vector unit is done with its slot (afterVector), or at once (the
    // caller waited for the dx written over it to leave).
    __aicore__ inline void RefillDy(bool afterVector) { Refill(dy_, dyGm_, afterVector, true); }

    // Pass 1 takes the row's chunk `chunk`: the rings' next, once it has landed.
    __aicore__ inline void Take(uint32_t chunk)
    {
        while (landingsWaited_ <= taken_) {
            WaitLanding();
        }
        slotOf_[chunk] = uint32_t(taken_ % slots_);
        ++taken_;
    }
    // The slots the current row's chunk `chunk` was taken from.
    __aicore__ inline LocalTensor<T> Dy(uint32_t chunk) { return dy_.slot[slotOf_[chunk]].template Get<T>(); }
    __aicore__ inline LocalTensor<T> X(uint32_t chunk) { return x_.slot[slotOf_[chunk]].template Get<T>(); }

    // dx replaced dy in the slot: once dx has left, the next row's chunk may land there (one chunk late).
    __aicore__ inline void CopyOutOverDy(uint64_t offset, const LocalTensor<T> &dx, uint32_t count, uint32_t chunk)
    {
        WaitFor<HardEvent::V_MTE3>(pipe_);
        CopyOutPad(dxGm_[offset], dx, count);
        SetFlag<HardEvent::MTE3_MTE2>(dxLeft_);
        if (chunk > 0) {
            RefillAfterDx();
        }
    }

    // The oldest slot whose dx is out (its flag set right after its copy-out) takes dy's next chunk.
    // Called one chunk late: waiting for the copy-out just issued would start the refill and the next
    // copy-out together, and the HBM channel would idle while both set up (two chunks late holds slots
    // back from the ring too long).
    __aicore__ inline void RefillAfterDx()
    {
        WaitFlag<HardEvent::MTE3_MTE2>(dxLeft_);
        RefillDy(false);
    }

private:
    // A ring's next chunk to receive.
    struct FillCursor {
        uint64_t row, end;  // the next row to receive, and the group's end
        uint32_t begin;     // the next chunk's first col
    };
    // A ring of chunk slots: the i-th chunk it receives lands in slot i % slots_ (slots are freed in
    // the order they were filled).
    struct Ring {
        TBuf<QuePosition::VECCALC> slot[kMaxRowSlots];
        FillCursor fill;
        uint64_t received = 0;
    };

    // The next chunk of dy (or x) the ring has not yet received, rows in order, lands in the ring's
    // next slot. x's chunk always lands first, so dy's landing flag covers both.
    __aicore__ inline void Refill(Ring &ring, const GlobalTensor<T> &src, bool afterVector, bool isDy)
    {
        FillCursor &fill = ring.fill;
        if (fill.row >= fill.end) {
            return;
        }
        if (isDy && landingsSet_ - landingsWaited_ == landings_) {
            WaitLanding();
        }
        if (afterVector) {
            WaitFor<HardEvent::V_MTE2>(pipe_);
        }
        const uint32_t n = ChunkCols(cols_, fill.begin, chunkCols_);
        CopyInPad(ring.slot[ring.received % slots_].template Get<T>(), src[fill.row * cols_ + fill.begin], n);
        ++ring.received;
        if (isDy) {
            SetFlag<HardEvent::MTE2_V>(landed_[landingsSet_ % landings_]);
            ++landingsSet_;
        }
        fill.begin += chunkCols_;
        if (fill.begin >= cols_) {
            fill.begin = 0;
            ++fill.row;
        }
    }
    // The vector unit waits for the oldest pending landing.
    __aicore__ inline void WaitLanding()
    {
        WaitFlag<HardEvent::MTE2_V>(landed_[landingsWaited_ % landings_]);
        ++landingsWaited_;
    }

    TPipe *pipe_ = nullptr;
    GlobalTensor<T> dyGm_, xGm_, dxGm_;
    TEventID dxLeft_ = 0;                            // MTE3 -> MTE2: a slot's dx has left, so it may be refilled
    uint32_t slots_ = 0, cols_ = 0, chunkCols_ = 0;  // slots per ring; the row's cols and chunk cols
    uint32_t landings_ = kRingLandings;              // MTE2_V ids held for landings
    Ring dy_, x_;                                    // one slot per chunk of the row, plus spare slots
    uint32_t slotOf_[kMaxRowSlots] = {};             // the current row's chunks: their slots, in order
    TEventID landed_[kRingLandings] = {};            // MTE2 -> V: dy's chunk (and x's before it) has landed
    uint64_t landingsSet_ = 0, landingsWaited_ = 0;  // dy chunks received, and waited for by the vector unit
    uint64_t taken_ = 0;                             // dy chunks taken by pass 1
};

}  // namespace rmsnorm_backward::kernel
