// SPDX-License-Identifier: BSD-3-Clause
// The streamed path's dgamma beyond the cols UB holds (rows of about 10^6 cols): those cols are summed
// in the row group's fp32 partial in GM, read-modified-written per row and chunk. The group's first
// row writes it, later rows read it back; a group without rows writes zeros.
// The read of a chunk needs the previous row's write of it to have landed (MTE3 -> MTE2): the streamed
// path's step P2(row - 1, chunk) between the two waits for MTE3 before it refills its slot, and
// stream_slots < chunks keeps that refill from running out before the group's last row, so no flag of
// its own is needed here.
//
// UB budget: the "dgamma partial in, out" row of the streamed path's table (C * 4 bytes, 2 * 2).
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class StreamedDgammaPartial {
public:
    __aicore__ inline void Init(TPipe *pipe, uint64_t chunkBytes)
    {
        pipe->InitBuffer(inQue_, kDoubleBuffer, chunkBytes);
        pipe->InitBuffer(outQue_, kDoubleBuffer, chunkBytes);
    }

    // partial[begin, begin + count) += rstd*dyX (= on the group's first row).
    __aicore__ inline void Accumulate(const GlobalTensor<float> &partial, const LocalTensor<float> &dyX, float rstd,
                                      uint32_t begin, uint32_t count, bool firstRow)
    {
        LocalTensor<float> out = outQue_.AllocTensor<float>();
        Muls(out, dyX, rstd, count);
        if (!firstRow) {
            LocalTensor<float> in = inQue_.AllocTensor<float>();
            CopyInPad(in, partial[begin], count);
            inQue_.EnQue(in);
            in = inQue_.DeQue<float>();
            Add(out, out, in, count);
            inQue_.FreeTensor(in);
        }
        CopyOut(partial[begin], out, count);
    }

    // partial[begin, cols) = 0 in chunks of C cols.
    __aicore__ inline void Zero(const GlobalTensor<float> &partial, uint32_t begin, uint32_t cols, uint32_t C)
    {
        for (; begin < cols; begin += C) {
            const uint32_t n = cols - begin < C ? cols - begin : C;
            LocalTensor<float> out = outQue_.AllocTensor<float>();
            Duplicate(out, 0.0f, n);
            CopyOut(partial[begin], out, n);
        }
    }

private:
    __aicore__ inline void CopyOut(const GlobalTensor<float> &dst, LocalTensor<float> &out, uint32_t count)
    {
        outQue_.EnQue(out);
        out = outQue_.DeQue<float>();
        CopyOutPad(dst, out, count);
        outQue_.FreeTensor(out);
    }

    TQue<QuePosition::VECIN, 1> inQue_;
    TQue<QuePosition::VECOUT, 1> outQue_;
};

}  // namespace rmsnorm_backward::kernel
