// The last phase of the launch when dgamma was summed in several row groups: after SyncAll, each core
// takes a slice of the columns and adds the groups' fp32 partials from the workspace in group order
// 0, 1, ..., G-1. The order never depends on the core or the block dim, so dgamma is bitwise
// reproducible; no atomics are involved. The partials of as many groups as fit the partial buffer
// arrive in one strided copy (one copy set-up instead of one per group).
//
// UB budget (RC = reduce_chunk fp32 elements):
//   buffer           elements   bytes
//   partial queue    2 x RC     8 * RC
//   sum queue        2 x RC     8 * RC
#pragma once
#include "rms_norm_backward_common.h"

namespace rms_norm_backward_impl {

class RmsNormBackwardDgammaReduce {
public:
    __aicore__ inline void Init(GM_ADDR dgamma, GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        t_ = tiling;
        const uint32_t cores = uint32_t(GetBlockNum()), core = uint32_t(GetBlockIdx());
        begin_ = uint32_t(uint64_t(t_.cols) * core / cores);
        end_ = uint32_t(uint64_t(t_.cols) * (core + 1) / cores);
        dgammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dgamma), t_.cols);
        partialsGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(GetUserWorkspace(workspace)),
                                    uint64_t(t_.groups) * t_.partial_stride);
        pipe->InitBuffer(partialQue_, 2, t_.reduce_chunk * sizeof(float));
        pipe->InitBuffer(sumQue_, 2, t_.reduce_chunk * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t col = begin_; col < end_; col += t_.reduce_chunk) {
            const uint32_t n = end_ - col < t_.reduce_chunk ? end_ - col : t_.reduce_chunk;
            const uint32_t rowFloats = RoundUp(n, kFloatsPerBlock);  // each group's slice lands block-aligned
            const uint32_t batch = t_.reduce_chunk / rowFloats < t_.groups ? t_.reduce_chunk / rowFloats : t_.groups;
            LocalTensor<float> dgamma = sumQue_.AllocTensor<float>();
            Duplicate(dgamma, 0.0f, n);
            for (uint32_t g = 0; g < t_.groups; g += batch) {
                const uint32_t k = t_.groups - g < batch ? t_.groups - g : batch;
                CopyIn(uint64_t(g) * t_.partial_stride + col, n, k);
                Compute(dgamma, n, k, rowFloats);
            }
            sumQue_.EnQue(dgamma);
            CopyOut(col, n);
        }
    }

private:
    // n cols of k consecutive groups' partials, partial_stride apart in GM.
    __aicore__ inline void CopyIn(uint64_t offset, uint32_t n, uint32_t k)
    {
        LocalTensor<float> partial = partialQue_.AllocTensor<float>();
        const uint32_t gap = (t_.partial_stride - n) * sizeof(float);
        DataCopyPad(partial, partialsGm_[offset], DataCopyExtParams(k, n * sizeof(float), gap, 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        partialQue_.EnQue(partial);
    }

    __aicore__ inline void Compute(const LocalTensor<float> &dgamma, uint32_t n, uint32_t k, uint32_t rowFloats)
    {
        LocalTensor<float> partial = partialQue_.DeQue<float>();
        for (uint32_t j = 0; j < k; ++j) {
            Add(dgamma, dgamma, partial[j * rowFloats], n);
        }
        partialQue_.FreeTensor(partial);
    }

    __aicore__ inline void CopyOut(uint32_t col, uint32_t n)
    {
        LocalTensor<float> dgamma = sumQue_.DeQue<float>();
        CopyOutPad(dgammaGm_[col], dgamma, n);
        sumQue_.FreeTensor(dgamma);
    }

    RmsNormBackwardTilingData t_;
    uint32_t begin_ = 0, end_ = 0;
    GlobalTensor<float> dgammaGm_, partialsGm_;
    TQue<QuePosition::VECIN, 1> partialQue_;
    TQue<QuePosition::VECOUT, 1> sumQue_;
};

}  // namespace rms_norm_backward_impl
