// SPDX-License-Identifier: BSD-3-Clause
// dgamma beyond what UB holds, summed in the row group's fp32 partial in GM (which the reduction after
// SyncAll reads, or dgamma itself for one group): the group's first row writes it, later rows add into
// it with SetAtomicAdd, so no chunk is read back into UB; a group without rows writes zeros. The
// long-rows ring sends all of dgamma this way (rows too long to hold it beside gamma, and bf16 rows
// that hold gamma in fp32 in its place), the streamed path the cols beyond dgamma_ub_cols (rows of
// about 10^6 cols).
// The adds are deterministic: a group's partial is written by the one core that owns the group, and
// its MTE3 copies land in issue order, so each col sums its rows in row order. The adds round as
// reading the chunk back and adding it on the vector unit would (fp32, to nearest), so dgamma's bits
// are those of that read-modify-write, without its L2 reads on MTE2.
//
// UB budget: the "dgamma partial out" row of each caller's table (C * 4 bytes, outBuffers).
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class DgammaPartial {
public:
    // outBuffers buffers of partial chunks on their way out.
    __aicore__ inline void Init(TPipe *pipe, uint64_t chunkBytes, int32_t outBuffers)
    {
        pipe->InitBuffer(outQue_, outBuffers, chunkBytes);
    }

    // partial[begin, begin + count) += rstd*dyX (= on the group's first row).
    __aicore__ inline void Accumulate(const GlobalTensor<float> &partial, const LocalTensor<float> &dyX, float rstd,
                                      uint32_t begin, uint32_t count, bool firstRow)
    {
        LocalTensor<float> out = outQue_.AllocTensor<float>();
        Muls(out, dyX, rstd, count);
        Store(partial[begin], out, count, !firstRow);
    }

    // partial[begin, begin + count) += a*b (= on the group's first row).
    __aicore__ inline void AddProduct(const GlobalTensor<float> &partial, const LocalTensor<float> &a,
                                      const LocalTensor<float> &b, uint32_t begin, uint32_t count, bool firstRow)
    {
        LocalTensor<float> out = outQue_.AllocTensor<float>();
        Mul(out, a, b, count);
        Store(partial[begin], out, count, !firstRow);
    }

    // partial[begin, cols) = 0 in chunks of C cols.
    __aicore__ inline void Zero(const GlobalTensor<float> &partial, uint32_t begin, uint32_t cols, uint32_t C)
    {
        for (; begin < cols; begin += C) {
            const uint32_t n = ChunkCols(cols, begin, C);
            LocalTensor<float> out = outQue_.AllocTensor<float>();
            Duplicate(out, 0.0f, n);
            Store(partial[begin], out, n, false);
        }
    }

private:
    // out leaves for dst, added into what dst holds where `add`.
    __aicore__ inline void Store(const GlobalTensor<float> &dst, LocalTensor<float> &out, uint32_t count, bool add)
    {
        outQue_.EnQue(out);
        out = outQue_.DeQue<float>();
        if (add) {
            SetAtomicAdd<float>();
        }
        CopyOutPad(dst, out, count);
        if (add) {
            SetAtomicNone();
        }
        outQue_.FreeTensor(out);
    }

    TQue<QuePosition::VECOUT, 1> outQue_;
};

}  // namespace rmsnorm_backward::kernel
