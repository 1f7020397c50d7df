// SPDX-License-Identifier: BSD-3-Clause
// dgamma beyond what UB holds, summed in the row group's fp32 partial in GM (which the reduction after
// SyncAll reads, or dgamma itself for one group): read-modified-written per row and chunk, the group's
// first row writing it, later rows reading it back; a group without rows writes zeros. The long-rows
// ring sends all of dgamma this way (fp32 rows too long to hold it beside gamma), the streamed path
// the cols beyond dgamma_ub_cols (rows of about 10^6 cols).
// A read of a chunk needs the previous row's write of it to have landed (MTE3 -> MTE2). The callers
// order it, so no flag of its own is needed here: the streamed path's step P2(row - 1, chunk) between
// the two waits for MTE3 before it refills its slot, and stream_slots < chunks keeps that refill from
// running out before the group's last row; the long-rows ring writes dx over dy, and its refill of a
// slot waits for that dx, written after the row's partial chunks.
//
// UB budget: the "dgamma partial in, out" row of each caller's table (C * 4 bytes, 2 + outBuffers).
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class DgammaPartial {
public:
    // Two buffers of partial chunks in (one fetched ahead), outBuffers out.
    __aicore__ inline void Init(TPipe *pipe, uint64_t chunkBytes, int32_t outBuffers)
    {
        pipe->InitBuffer(inQue_, kDoubleBuffer, chunkBytes);
        pipe->InitBuffer(outQue_, outBuffers, chunkBytes);
    }

    // partial[begin, begin + count) += rstd*dyX (= on the group's first row).
    __aicore__ inline void Accumulate(const GlobalTensor<float> &partial, const LocalTensor<float> &dyX, float rstd,
                                      uint32_t begin, uint32_t count, bool firstRow)
    {
        if (!firstRow) {
            Fetch(partial, begin, count);
        }
        AddScaled(partial, dyX, rstd, begin, count, !firstRow);
    }

    // The read of partial[begin, begin + count) is queued now, for the AddScaled or AddProduct of those
    // cols with addFetched; one more Fetch may run ahead of it (two buffers).
    __aicore__ inline void Fetch(const GlobalTensor<float> &partial, uint32_t begin, uint32_t count)
    {
        LocalTensor<float> in = inQue_.AllocTensor<float>();
        CopyInPad(in, partial[begin], count);
        inQue_.EnQue(in);
    }

    // Fetch of chunk `chunk` of a row of `cols` cols in chunks of C (the last one short); nothing past
    // the row's last chunk, so a caller fetching one chunk ahead needs no test of its own.
    __aicore__ inline void FetchChunk(const GlobalTensor<float> &partial, uint32_t chunk, uint32_t C, uint32_t cols)
    {
        const uint32_t begin = chunk * C;
        if (begin < cols) {
            Fetch(partial, begin, ChunkCols(cols, begin, C));
        }
    }

    // partial[begin, begin + count) = scale*x, plus the oldest fetched chunk where addFetched.
    __aicore__ inline void AddScaled(const GlobalTensor<float> &partial, const LocalTensor<float> &x, float scale,
                                     uint32_t begin, uint32_t count, bool addFetched)
    {
        LocalTensor<float> out = outQue_.AllocTensor<float>();
        Muls(out, x, scale, count);
        Store(partial, out, begin, count, addFetched);
    }

    // partial[begin, begin + count) = a*b, plus the oldest fetched chunk where addFetched.
    __aicore__ inline void AddProduct(const GlobalTensor<float> &partial, const LocalTensor<float> &a,
                                      const LocalTensor<float> &b, uint32_t begin, uint32_t count, bool addFetched)
    {
        LocalTensor<float> out = outQue_.AllocTensor<float>();
        Mul(out, a, b, count);
        Store(partial, out, begin, count, addFetched);
    }

    // partial[begin, cols) = 0 in chunks of C cols.
    __aicore__ inline void Zero(const GlobalTensor<float> &partial, uint32_t begin, uint32_t cols, uint32_t C)
    {
        for (; begin < cols; begin += C) {
            const uint32_t n = ChunkCols(cols, begin, C);
            LocalTensor<float> out = outQue_.AllocTensor<float>();
            Duplicate(out, 0.0f, n);
            CopyOut(partial[begin], out, n);
        }
    }

private:
    // out (+ the oldest fetched chunk) leaves for partial[begin, begin + count).
    __aicore__ inline void Store(const GlobalTensor<float> &partial, LocalTensor<float> &out, uint32_t begin,
                                 uint32_t count, bool addFetched)
    {
        if (addFetched) {
            LocalTensor<float> in = inQue_.DeQue<float>();
            Add(out, out, in, count);
            inQue_.FreeTensor(in);
        }
        CopyOut(partial[begin], out, count);
    }

    __aicore__ inline void CopyOut(const GlobalTensor<float> &dst, LocalTensor<float> &out, uint32_t count)
    {
        outQue_.EnQue(out);
        out = outQue_.DeQue<float>();
        CopyOutPad(dst, out, count);
        outQue_.FreeTensor(out);
    }

    TQue<QuePosition::VECIN, kDoubleBuffer> inQue_;  // a fetched chunk may wait behind the next one
    TQue<QuePosition::VECOUT, 1> outQue_;
};

}  // namespace rmsnorm_backward::kernel
