// rstd of one row group, read by the scalar unit row by row: fetched kRstdBatchRows rows at a time
// (never past the group) into two buffers in turn, one batch ahead (two buffers, not two halves of
// one: the scalar unit reads one while MTE2 fills the other, and the pipe handshakes order buffers). A scalar read waits with
// MTE2_S for its copy; were that copy issued just before the read, the scalar unit (and every
// instruction after it) would wait behind all row copies queued on MTE2 before it.
//
// UB budget:
//   buffer          elements   bytes
//   rstd batches    2 x 64     512
#pragma once
#include "rms_norm_backward_common.h"

namespace rms_norm_backward_impl {

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
        const uint64_t left = group_.end - begin;
        const uint32_t n = left < kRstdBatchRows ? uint32_t(left) : kRstdBatchRows;
        WaitFor<HardEvent::S_MTE2>(pipe_);  // the scalar unit is done with the buffer this batch lands in
        CopyInPad(buf_[fetchHalf_].Get<float>(), rstd_[begin], n);
        SetFlag<HardEvent::MTE2_S>(landed_);
        fetchHalf_ ^= 1;
        fetchedEnd_ = begin + n;
    }

    TPipe *pipe_ = nullptr;
    GlobalTensor<float> rstd_;
    TBuf<QuePosition::VECCALC> buf_[2];
    TEventID landed_ = 0;  // MTE2 -> S: a batch has landed
    RowGroup group_{0, 0};
    uint64_t useBegin_ = 0, useEnd_ = 0, fetchedEnd_ = 0;  // rows of the batch in use; end of those fetched
    uint32_t useHalf_ = 0, fetchHalf_ = 0;                 // which of buf_
};

}  // namespace rms_norm_backward_impl
