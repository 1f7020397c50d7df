// SPDX-License-Identifier: BSD-3-Clause
// The row sum of gamma*(dy*x) (of dy*x without gamma) over a long row's chunks, and its total: kept
// lane-wise in sum_cols lanes (AddLaneSum: one MulAddDst a further sum_cols of a chunk), or with
// sum_cols 0 one value per chunk (a Mul and a ReduceSum each, no lane-wise accumulator), then reduced
// across its lanes or chunks on the vector unit and read by the scalar unit (RowTotal).
//
// UB budget: the "row sum", "ReduceSum work" and "row total" rows of the long-rows table.
#pragma once
#include "rms_norm_backward_chunk_math.h"

namespace rmsnorm_backward::kernel {

class LongRowSum {
public:
    __aicore__ inline void Init(TPipe *pipe, uint64_t sumBytes, uint64_t workBytes, uint32_t sumCols, uint32_t cols,
                                uint32_t chunkCols)
    {
        pipe->InitBuffer(sum_, sumBytes);
        pipe->InitBuffer(work_, workBytes);
        pipe->InitBuffer(total_, kBlockBytes);
        sumCols_ = sumCols;
        count_ = sumCols == 0 ? CeilDiv(cols, chunkCols) : (cols < sumCols ? cols : sumCols);
    }

    __aicore__ inline bool PerChunk() const { return sumCols_ == 0; }
    // The lanes (KeptChunkPass1 scales and extends them).
    __aicore__ inline LocalTensor<float> Lanes() { return sum_.Get<float>(); }

    // Adds gamma*dyX (dyX where not `scaled`) of chunk `chunk`, `first` for the row's first chunk;
    // `scratch` takes the product of a per-chunk sum.
    template <bool scaled>
    __aicore__ inline void Add(const LocalTensor<float> &gamma, const LocalTensor<float> &dyX,
                               const LocalTensor<float> &scratch, uint32_t chunk, bool first, uint32_t count)
    {
        const LocalTensor<float> sum = sum_.Get<float>();
        if (PerChunk()) {
            if constexpr (scaled) {
                Mul(scratch, gamma, dyX, count);
            }
            ReduceSum(sum[chunk], scaled ? scratch : dyX, work_.Get<float>(), count);
            return;
        }
        AddLaneSum<scaled>(sum, gamma, dyX, count, sumCols_, first);
    }

    // The row's total, on the scalar unit.
    __aicore__ inline float Total(TPipe *pipe)
    {
        return RowTotal(total_.Get<float>(), sum_.Get<float>(), work_.Get<float>(), count_, pipe);
    }

private:
    TBuf<QuePosition::VECCALC> sum_, work_, total_;
    uint32_t sumCols_ = 0;
    uint32_t count_ = 0;  // the lanes (or chunk sums) the total reduces
};

}  // namespace rmsnorm_backward::kernel
