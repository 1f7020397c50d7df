// SPDX-License-Identifier: BSD-3-Clause
// gamma as the long-rows chunks read it, held whole in UB: in fp32 (float32 gamma, or 16-bit gamma
// widened once with its offset: layout::GammaInF32), or in its 16-bit dtype, widened per chunk and
// given its offset after each widening. fp16 gamma without an offset is read as halves where a chunk
// forms dy*gamma (HalfProductAxpy): the product is exact in fp32 either way.
// Or, where the row leaves no room for gamma whole (fp32 rows in a ring), a float32 gamma comes chunk
// by chunk through a queue of chunk buffers, in the order the row steps take them: each chunk is
// taken (TakeChunk) for the steps that read it, given its offset once, and released (ReleaseChunk),
// which reads the chunk the queue's buffers are next free for.
//
// UB budget: the "gamma" rows of the long-rows table.
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

    // gamma (float32 in GM) through `slots` (at most kDoubleBuffer) buffers of `bytes` (chunkCols floats)
    // instead of whole: the rows' chunks of `cols` in turn.
    __aicore__ inline void InitChunks(TPipe *pipe, uint32_t slots, uint64_t bytes, const GlobalTensor<float> &gamma,
                                      uint32_t cols, uint32_t chunkCols, float offset)
    {
        pipe->InitBuffer(chunks_, slots, bytes);
        gammaGm_ = gamma;
        slots_ = slots;
        cols_ = cols;
        chunkCols_ = chunkCols;
        chunked_ = true;
        inF32_ = true;
        offset_ = offset;
    }

    // The next `rounds` passes over the row's chunks will take them: the first ones are read now. (This,
    // TakeChunk and ReleaseChunk do nothing where gamma is held whole.)
    __aicore__ inline void StartChunks(uint32_t rounds)
    {
        if (!chunked_) {
            return;
        }
        fillBegin_ = 0;
        toFill_ = uint64_t(rounds) * CeilDiv(cols_, chunkCols_);
        for (uint32_t i = 0; i < slots_; ++i) {
            FillNext();
        }
    }
    // The next chunk (the row's chunk `chunk`), landed, with its offset; Scale and DyTimesPlusX read it
    // until ReleaseChunk.
    __aicore__ inline void TakeChunk(uint32_t chunk)
    {
        if (!chunked_) {
            return;
        }
        taken_ = chunks_.DeQue<float>();
        if (offset_ != 0.0f) {
            AddGammaOffset(taken_, offset_, ChunkCols(cols_, chunk * chunkCols_, chunkCols_));
        }
    }
    __aicore__ inline void ReleaseChunk()
    {
        if (!chunked_) {
            return;
        }
        chunks_.FreeTensor(taken_);
        FillNext();
    }

    // The buffer LoadGammaWhole fills (in fp32 where InF32).
    __aicore__ inline TBuf<QuePosition::VECCALC> &Buffer() { return buf_; }
    __aicore__ inline bool InF32() const { return inF32_; }
    __aicore__ inline LocalTensor<float> WholeF32() { return buf_.Get<float>(); }

    // The scale gamma + gamma_offset of cols [begin, begin + count) in fp32, widened into `scratch` where
    // gamma is held in its 16-bit dtype.
    __aicore__ inline LocalTensor<float> Scale(const LocalTensor<float> &scratch, uint32_t begin, uint32_t count)
    {
        if (chunked_) {
            return taken_;
        }
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
    // The chunk after the last one read (the row's first after its last), while any is left to read.
    __aicore__ inline void FillNext()
    {
        if (toFill_ == 0) {
            return;
        }
        const uint32_t n = ChunkCols(cols_, fillBegin_, chunkCols_);
        LocalTensor<float> chunk = chunks_.AllocTensor<float>();
        CopyInPad(chunk, gammaGm_[fillBegin_], n);
        chunks_.EnQue(chunk);
        fillBegin_ = fillBegin_ + chunkCols_ < cols_ ? fillBegin_ + chunkCols_ : 0;
        --toFill_;
    }

    TBuf<QuePosition::VECCALC> buf_;
    TQue<QuePosition::VECIN, kDoubleBuffer> chunks_;  // gamma's chunks where it is not held whole
    GlobalTensor<float> gammaGm_;
    LocalTensor<float> taken_;
    uint64_t toFill_ = 0;
    uint32_t slots_ = 0, cols_ = 0, chunkCols_ = 0, fillBegin_ = 0;
    bool chunked_ = false;
    bool inF32_ = false;
    bool halves_ = false;
    float offset_ = 0.0f;
};

}  // namespace rmsnorm_backward::kernel
