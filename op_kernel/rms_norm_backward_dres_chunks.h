// SPDX-License-Identifier: BSD-3-Clause
// The fused form's residual gradient dres, read chunk by chunk for pass 2 of the long-rows paths into
// a queue of two (the next chunk lands while this one is added): dx = rstd*g + dres in fp32, rounded
// once (ScaleToDxPlusDres).
//
// UB budget: the "dres queue" row of each caller's table (2 chunks of the dtype).
#pragma once
#include "rms_norm_backward_chunk_math.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class DresChunks {
public:
    __aicore__ inline void Init(TPipe *pipe, uint64_t chunkBytes) { pipe->InitBuffer(que_, kDoubleBuffer, chunkBytes); }

    // dres[offset, offset + count) queued behind the chunks read before it.
    __aicore__ inline void Read(const GlobalTensor<T> &dres, uint64_t offset, uint32_t count)
    {
        LocalTensor<T> chunk = que_.AllocTensor<T>();
        CopyInPad(chunk, dres[offset], count);
        que_.EnQue(chunk);
    }

    // dx = rstd*g + the oldest queued chunk (16-bit dres widened in `scratch`), which leaves the queue.
    __aicore__ inline void AddTo(const LocalTensor<T> &dx, const LocalTensor<float> &g, float rstd,
                                 const LocalTensor<float> &scratch, uint32_t count)
    {
        LocalTensor<T> chunk = que_.DeQue<T>();
        ScaleToDxPlusDres(dx, g, chunk, rstd, scratch, count);
        que_.FreeTensor(chunk);
    }

private:
    TQue<QuePosition::VECIN, kDoubleBuffer> que_;
};

}  // namespace rmsnorm_backward::kernel
