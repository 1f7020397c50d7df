// SPDX-License-Identifier: BSD-3-Clause
// gamma as the long-rows chunks read it, held whole in UB: in fp32 (float32 gamma, or 16-bit gamma
// widened once with its offset: layout::GammaInF32), or in its 16-bit dtype, widened per chunk and
// given its offset after each widening. fp16 gamma without an offset is read as halves where a chunk
// forms dy*gamma (HalfProductAxpy): the product is exact in fp32 either way.
//
// UB budget: the "gamma" row of the long-rows table.
#pragma once
#include "rms_norm_backward_chunk_math.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class ChunkGamma {
public:
    // bytes 0: no gamma (nothing is read).
    __aicore__ inline void Init(TPipe *pipe, uint64_t bytes, bool inF32, float offset)
    {
        if (bytes > 0) {
            pipe->InitBuffer(buf_, bytes);
        }
        inF32_ = inF32;
        offset_ = offset;
        halves_ = kDtypeOf<T> == RmsNormBackwardDtype::kFloat16 && bytes > 0 && !inF32 && offset == 0.0f;
    }

    // The buffer LoadGammaWhole fills (in fp32 where InF32).
    __aicore__ inline TBuf<QuePosition::VECCALC> &Buffer() { return buf_; }
    __aicore__ inline bool InF32() const { return inF32_; }
    __aicore__ inline LocalTensor<float> WholeF32() { return buf_.Get<float>(); }

    // The scale gamma + gamma_offset of cols [begin, begin + count) in fp32, widened into `scratch` where
    // gamma is held in its 16-bit dtype.
    __aicore__ inline LocalTensor<float> Scale(const LocalTensor<float> &scratch, uint32_t begin, uint32_t count)
    {
        if (inF32_) {
            return buf_.Get<float>()[begin];
        }
        const LocalTensor<float> scale = AsFloat(scratch, buf_.Get<T>()[begin], count);
        if constexpr (!kIsFloat<T>) {
            AddGammaOffset(scale, offset_, count);
        }
        return scale;
    }

    // g = dy*gamma + xScale*x in fp32 over cols [begin, begin + count) (`scratch`: a second fp32 chunk).
    __aicore__ inline void DyTimesPlusX(const LocalTensor<float> &g, const LocalTensor<float> &scratch,
                                        const LocalTensor<T> &dy, const LocalTensor<T> &x, float xScale,
                                        uint32_t begin, uint32_t count)
    {
        if constexpr (kDtypeOf<T> == RmsNormBackwardDtype::kFloat16) {
            if (halves_) {
                HalfProductAxpy(g, dy, buf_.Get<T>()[begin], x, xScale, count);
                return;
            }
        }
        Mul(g, AsFloat(g, dy, count), Scale(scratch, begin, count), count);
        Axpy(g, AsFloat(scratch, x, count), xScale, count);
    }

private:
    TBuf<QuePosition::VECCALC> buf_;
    bool inF32_ = false;
    bool halves_ = false;
    float offset_ = 0.0f;
};

}  // namespace rmsnorm_backward::kernel
