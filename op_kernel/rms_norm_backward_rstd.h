// SPDX-License-Identifier: BSD-3-Clause
// rstd of one row group, in batches that never reach past the group: RstdBatches for the scalar unit
// (long rows), RstdTileBatches for the vector unit (small cols).
//
// RstdBatches: read by the scalar unit row by row, fetched kRstdBatchRows rows at a time into two
// buffers in turn, one batch ahead (two buffers, not two halves of one: the scalar unit reads one
// while MTE2 fills the other, and the pipe handshakes order buffers). A scalar read waits with
// MTE2_S for its copy; were that copy issued just before the read, the scalar unit (and every
// instruction after it) would wait behind all row copies queued on MTE2 before it.
//
// RstdTileBatches: read by the vector unit as a tensor, a tile's rows at a time; a batch holds
// `batchRows` rows (several tiles') and is copied when a tile reaches past the last batch, with the
// tile's own copies, so one copy set-up serves many tiles. The queue holds two batches: the one the
// computed tile reads and the next.
//
// UB layout: two buffers of kRstdBatchRows (RstdBatches) or batchRows (RstdTileBatches) fp32 each,
// counted in the paths' layouts in rms_norm_backward_ub_layout.h.
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

// The end of the batch from `begin`: `batchRows` rows, never past the group's end.
__aicore__ inline uint64_t BatchEnd(uint64_t begin, uint64_t groupEnd, uint32_t batchRows)
{
    return groupEnd - begin < batchRows ? groupEnd : begin + batchRows;
}

class RstdBatches {
public:
    __aicore__ inline void Init(TPipe *pipe, const GlobalTensor<float> &rstd)
    {
        pipe_ = pipe;
        rstd_ = rstd;
        pipe_->InitBuffer(buf_[0], kRstdBatchRows * sizeof(float));
        pipe_->InitBuffer(buf_[1], kRstdBatchRows * sizeof(float));
        landed_ = pipe_->AllocEventID<HardEvent::MTE2_S>();
    }

    // Before the group's first row copy: its first batch.
    __aicore__ inline void Start(const RowGroup &group)
    {
        group_ = group;
        useBegin_ = useEnd_ = group.begin;
        if (group.begin < group.end) {
            Fetch(group.begin);
        }
    }

    // Rows in order, from the group's first.
    __aicore__ inline float Get(uint64_t row)
    {
        if (row >= useEnd_) {
            WaitFlag<HardEvent::MTE2_S>(landed_);
            useBegin_ = row;
            useEnd_ = fetchedEnd_;
            useHalf_ = fetchHalf_ ^ 1;
            if (fetchedEnd_ < group_.end) {
                Fetch(fetchedEnd_);
            }
        }
        return buf_[useHalf_].Get<float>().GetValue(uint32_t(row - useBegin_));
    }

private:
    __aicore__ inline void Fetch(uint64_t begin)
    {
        const uint32_t n = uint32_t(BatchEnd(begin, group_.end, kRstdBatchRows) - begin);
        WaitFor<HardEvent::S_MTE2>(pipe_);  // the scalar unit is done with the buffer this batch lands in
        CopyInPad(buf_[fetchHalf_].Get<float>(), rstd_[begin], n);
        SetFlag<HardEvent::MTE2_S>(landed_);
        fetchHalf_ ^= 1;
        fetchedEnd_ = begin + n;
    }

    TPipe *pipe_ = nullptr;
    GlobalTensor<float> rstd_;
    TBuf<QuePosition::VECCALC> buf_[kDoubleBuffer];
    TEventID landed_ = 0;  // MTE2 -> S: a batch has landed
    RowGroup group_{0, 0};
    uint64_t useBegin_ = 0, useEnd_ = 0, fetchedEnd_ = 0;  // rows of the batch in use; end of those fetched
    uint32_t useHalf_ = 0, fetchHalf_ = 0;                 // which of buf_
};

class RstdTileBatches {
public:
    __aicore__ inline void Init(TPipe *pipe, const GlobalTensor<float> &rstd, uint32_t batchRows)
    {
        rstd_ = rstd;
        batchRows_ = batchRows;
        pipe->InitBuffer(inQueRstd_, kDoubleBuffer, batchRows * sizeof(float));
    }

    __aicore__ inline void Start(const RowGroup &group)
    {
        groupEnd_ = group.end;
        loadEnd_ = group.begin;
    }

    // With the copy-in of the tile of `n` rows at `row`: the next batch, when the tile reaches past the last.
    __aicore__ inline void CopyInFor(uint64_t row, uint32_t n)
    {
        if (row + n <= loadEnd_) {
            return;
        }
        const uint64_t end = BatchEnd(row, groupEnd_, batchRows_);
        LocalTensor<float> batch = inQueRstd_.AllocTensor<float>();
        CopyInPad(batch, rstd_[row], uint32_t(end - row));
        inQueRstd_.EnQue(batch);
        starts_[loads_++ % kDoubleBuffer] = row;
        loadEnd_ = end;
    }

    // rstd of the tile at `row`: a slice of the batch that holds it (taken from the queue at its first
    // tile, when Fresh() holds until the next call).
    __aicore__ inline LocalTensor<float> Of(uint64_t row)
    {
        fresh_ = uses_ < loads_ && starts_[uses_ % kDoubleBuffer] == row;
        if (fresh_) {
            if (held_) {
                inQueRstd_.FreeTensor(batch_);
            }
            batch_ = inQueRstd_.DeQue<float>();
            start_ = row;
            end_ = uses_ + 1 < loads_ ? starts_[(uses_ + 1) % kDoubleBuffer] : loadEnd_;
            held_ = true;
            uses_++;
        }
        return batch_[uint32_t(row - start_)];
    }
    __aicore__ inline bool Fresh() const { return fresh_; }
    // The held batch: all its rows, their count, and where the tile at `row` starts in it.
    __aicore__ inline LocalTensor<float> Batch() const { return batch_; }
    __aicore__ inline uint32_t BatchCount() const { return uint32_t(end_ - start_); }
    __aicore__ inline uint32_t IndexOf(uint64_t row) const { return uint32_t(row - start_); }

    // After the group's last tile.
    __aicore__ inline void Finish()
    {
        if (held_) {
            inQueRstd_.FreeTensor(batch_);
            held_ = false;
        }
    }

private:
    GlobalTensor<float> rstd_;
    uint32_t batchRows_ = 0;
    TQue<QuePosition::VECIN, kDoubleBuffer> inQueRstd_;  // the next batch is queued early
    LocalTensor<float> batch_;                           // the batch the computed tile's rstd is in
    uint64_t start_ = 0, end_ = 0, loadEnd_ = 0, groupEnd_ = 0;  // the held batch's rows; the rows loaded
    uint64_t starts_[kDoubleBuffer] = {0, 0};  // first rows of the batches in the queue
    uint32_t loads_ = 0, uses_ = 0;
    bool held_ = false, fresh_ = false;
};

}  // namespace rmsnorm_backward::kernel
