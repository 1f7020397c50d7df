// SPDX-License-Identifier: BSD-3-Clause
// The last phase of the launch when dgamma was summed in several row groups: after SyncAll, each core
// takes a slice of the columns (one core all of them where a row is shorter than a GM burst) and adds
// the groups' fp32 partials from the workspace by one pairwise tree over the groups (the upper half of
// the groups onto the lower, log2(G) times). Every column is
// summed in that same order, whatever slice a core takes, so dgamma is bitwise reproducible across
// block dims; no atomics are involved. A step takes as many columns as leave room for all G partials
// in the partial buffer, in one strided copy, and needs log2(G) vector instructions.
//
// UB budget: DgammaReduce in rms_norm_backward_ub_layout.h, on the pipe the path's buffers left (reset);
// tests/kernel/test_ub_budget.py checks this table.  RC = reduce_chunk
//   | buffer                        | buffers     | bytes each                |
//   | partial queue                 | 2           | RC * 4                    |
//   | sum queue                     | 2           | RC * 4                    |
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class RmsNormBackwardDgammaReduce {
public:
    static constexpr uint32_t kGmBurstBytes = 512;  // the largest GM transfer burst (programming guide)

    __aicore__ inline void Init(GM_ADDR dgamma, GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        t_ = tiling;
        const uint32_t cores = uint32_t(GetBlockNum()), core = uint32_t(GetBlockIdx());
        // Rows shorter than a 512-byte GM burst of floats: one core takes them all, the groups' partials
        // one contiguous range, where slices would each cost the link a burst per group for a few bytes.
        const uint32_t takers = t_.cols * sizeof(float) < kGmBurstBytes ? 1 : cores;
        begin_ = core < takers ? uint32_t(uint64_t(t_.cols) * core / takers) : t_.cols;
        end_ = core < takers ? uint32_t(uint64_t(t_.cols) * (core + 1) / takers) : t_.cols;
        dgammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dgamma), t_.cols);
        partialsGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(GetUserWorkspace(workspace)),
                                    uint64_t(t_.groups) * t_.partial_stride);
        const auto layout = rmsnorm_backward::layout::DgammaReduce(t_.reduce_chunk);
        pipe->InitBuffer(inQuePartial_, kDoubleBuffer, layout.chunkBytes);
        pipe->InitBuffer(outQueDgamma_, kDoubleBuffer, layout.chunkBytes);
    }

    __aicore__ inline void Process()
    {
        // Columns per step: all G partials of them fit the partial buffer, each slice block-aligned.
        const uint32_t span = t_.reduce_chunk / t_.groups / kFloatsPerBlock * kFloatsPerBlock;
        for (uint32_t col = begin_; col < end_; col += span) {
            const uint32_t n = end_ - col < span ? end_ - col : span;
            CopyIn(col, n);
            Compute(n);
            CopyOut(col, n);
        }
    }

private:
    // n cols of every group's partial, partial_stride apart in GM, each landing block-aligned in UB.
    __aicore__ inline void CopyIn(uint64_t col, uint32_t n)
    {
        LocalTensor<float> partial = inQuePartial_.AllocTensor<float>();
        const uint32_t gap = (t_.partial_stride - n) * sizeof(float);
        DataCopyPad(partial, partialsGm_[col], DataCopyExtParams(t_.groups, n * sizeof(float), gap, 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        inQuePartial_.EnQue(partial);
    }

    // Folds the upper groups onto the lower ones until two are left, then adds those into the sum.
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<float> partial = inQuePartial_.DeQue<float>();
        LocalTensor<float> dgamma = outQueDgamma_.AllocTensor<float>();
        const uint32_t rowFloats = RoundUp(n, kFloatsPerBlock);
        uint32_t rows = t_.groups;
        for (; rows > 2; rows -= rows / 2) {
            Add(partial, partial, partial[(rows - rows / 2) * rowFloats], rows / 2 * rowFloats);
        }
        Add(dgamma, partial, partial[rowFloats], n);
        inQuePartial_.FreeTensor(partial);
        outQueDgamma_.EnQue(dgamma);
    }

    __aicore__ inline void CopyOut(uint32_t col, uint32_t n)
    {
        LocalTensor<float> dgamma = outQueDgamma_.DeQue<float>();
        CopyOutPad(dgammaGm_[col], dgamma, n);
        outQueDgamma_.FreeTensor(dgamma);
    }

    RmsNormBackwardTilingData t_;
    uint32_t begin_ = 0, end_ = 0;
    GlobalTensor<float> dgammaGm_, partialsGm_;
    TQue<QuePosition::VECIN, 1> inQuePartial_;
    TQue<QuePosition::VECOUT, 1> outQueDgamma_;
};

}  // namespace rmsnorm_backward::kernel
