// Split-D (cols > 6080): rows in groups of groupRows, columns in chunks of chunkCols. Pass 1 walks a
// group chunk by chunk, reloading gamma per chunk, summing each row's g * xhat over the chunks and
// each chunk's dgamma over the group's rows, which it then adds to GM atomically. Pass 2 walks the
// group again, re-reading gamma, dy and x per chunk, and writes dx. A row's bytes are thus read
// again groupRows rows later.
//
// UB (W = chunkCols, s = sizeof(T)): dy, x queues 2 x W*s each; gamma W*s; dx W*s; dgamma W*4;
// rstd of a group; 16-bit only: gamma, dy, x and dy*gamma in fp32, W*4 each.
#pragma once
#include "anchor_common.h"

namespace anchor {

constexpr uint32_t kMaxGroupRows = 32;

template <typename T>
class AnchorSplitD : public AnchorKernelBase<T> {
    using KernelBase = AnchorKernelBase<T>;
    using KernelBase::t_, KernelBase::pipe_, KernelBase::gm_, KernelBase::out_;

public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        KernelBase::InitBase(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
        const uint32_t chunk = t_.chunkCols * sizeof(T);
        pipe_->InitBuffer(dyQue_, 2, chunk);
        pipe_->InitBuffer(xQue_, 2, chunk);
        pipe_->InitBuffer(gammaQue_, 1, chunk);
        pipe_->InitBuffer(rstdQue_, 1, kMaxGroupRows * sizeof(float));
        pipe_->InitBuffer(dxQue_, 1, chunk);
        pipe_->InitBuffer(dgammaBuf_, t_.chunkCols * sizeof(float));
        pipe_->InitBuffer(sumBuf_, kBlockBytes);
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(gammaF32Buf_, t_.chunkCols * sizeof(float));
            pipe_->InitBuffer(dyF32Buf_, t_.chunkCols * sizeof(float));
            pipe_->InitBuffer(xF32Buf_, t_.chunkCols * sizeof(float));
            pipe_->InitBuffer(gBuf_, t_.chunkCols * sizeof(float));
        }
    }

    __aicore__ inline void Process()
    {
        dgamma_ = dgammaBuf_.Get<float>();
        out_.Zero(t_, dgamma_, t_.chunkCols, pipe_);
        const RowRange mine = CoreRows(t_);
        for (uint64_t row = mine.begin; row < mine.end; row += t_.groupRows) {
            const uint32_t n = mine.end - row < t_.groupRows ? uint32_t(mine.end - row) : t_.groupRows;
            LoadGroupRstd(row, n);
            for (uint32_t c = 0; c < t_.cols; c += t_.chunkCols) {
                SumChunk(row, n, c, Width(c));
            }
            for (uint32_t r = 0; r < n; ++r) {
                mean_[r] *= t_.invCols;
            }
            for (uint32_t c = 0; c < t_.cols; c += t_.chunkCols) {
                DxChunk(row, n, c, Width(c));
            }
        }
        if (t_.deterministic) {
            FinalSum(t_, out_, pipe_);
        }
    }

private:
    __aicore__ inline uint32_t Width(uint32_t col) const
    {
        return t_.cols - col < t_.chunkCols ? t_.cols - col : t_.chunkCols;
    }

    __aicore__ inline void LoadGroupRstd(uint64_t row, uint32_t n)
    {
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        LoadRows(rstd, gm_.rstd[row], 1, n, n, kMaxGroupRows);
        rstdQue_.EnQue(rstd);
        rstd = rstdQue_.DeQue<float>();
        WaitFor<HardEvent::MTE2_S>(pipe_);
        for (uint32_t r = 0; r < n; ++r) {
            rstdRow_[r] = rstd.GetValue(r);
            mean_[r] = 0.0f;
        }
        rstdQue_.FreeTensor(rstd);
    }

    __aicore__ inline void LoadGamma(uint32_t col, uint32_t width)
    {
        LocalTensor<T> gamma = gammaQue_.AllocTensor<T>();
        LoadRows(gamma, gm_.gamma[col], 1, width, width, t_.chunkCols);
        gammaQue_.EnQue(gamma);
        gammaT_ = gammaQue_.DeQue<T>();
        if constexpr (IsFloat<T>()) {
            gammaF32_ = gammaT_;
        } else {
            gammaF32_ = gammaF32Buf_.Get<float>();
            Cast(gammaF32_, gammaT_, RoundMode::CAST_NONE, width);
            VectorBarrier();
        }
    }

    __aicore__ inline void CopyIn(uint64_t row, uint32_t col, uint32_t width)
    {
        LocalTensor<T> dy = dyQue_.AllocTensor<T>();
        LocalTensor<T> x = xQue_.AllocTensor<T>();
        LoadRows(dy, gm_.dy[row * t_.cols + col], 1, width, width, t_.chunkCols);
        LoadRows(x, gm_.x[row * t_.cols + col], 1, width, width, t_.chunkCols);
        dyQue_.EnQue(dy);
        xQue_.EnQue(x);
    }

    // The chunk of one row in fp32: dy and x (widened for 16-bit data) and where dy * gamma goes.
    struct RowChunk {
        LocalTensor<T> dyT, xT;
        LocalTensor<float> dy, x, g;
    };
    __aicore__ inline RowChunk TakeRow(uint32_t width)
    {
        RowChunk rc;
        rc.dyT = dyQue_.DeQue<T>();
        rc.xT = xQue_.DeQue<T>();
        if constexpr (IsFloat<T>()) {
            rc.dy = rc.dyT;
            rc.x = rc.xT;
        } else {
            rc.dy = dyF32Buf_.Get<float>();
            rc.x = xF32Buf_.Get<float>();
            rc.g = gBuf_.Get<float>();
            Cast(rc.dy, rc.dyT, RoundMode::CAST_NONE, width);
            VectorBarrier();
            Cast(rc.x, rc.xT, RoundMode::CAST_NONE, width);
            VectorBarrier();
        }
        return rc;
    }
    __aicore__ inline void DropRow(RowChunk &rc)
    {
        dyQue_.FreeTensor(rc.dyT);
        xQue_.FreeTensor(rc.xT);
    }

    // Pass 1 over one chunk of the group: each row's share of sum(g * xhat), and dgamma's chunk.
    __aicore__ inline void SumChunk(uint64_t row, uint32_t n, uint32_t col, uint32_t width)
    {
        LoadGamma(col, width);
        Duplicate(dgamma_, 0.0f, width);
        VectorBarrier();
        CopyIn(row, col, width);
        for (uint32_t r = 0; r < n; ++r) {
            RowChunk rc = TakeRow(width);
            Muls(rc.x, rc.x, rstdRow_[r], width);
            VectorBarrier();
            Mul(rc.dy, rc.dy, rc.x, width);  // dy * xhat
            VectorBarrier();
            Add(dgamma_, dgamma_, rc.dy, width);
            VectorBarrier();
            Mul(rc.dy, rc.dy, gammaF32_, width);  // g * xhat = (dy * xhat) * gamma
            VectorBarrier();
            mean_[r] += HalvingTreeSum(sumBuf_.Get<float>(), rc.dy, width, pipe_);
            DropRow(rc);
            if (r + 1 < n) {
                CopyIn(row + r + 1, col, width);
            }
        }
        out_.AddPart(col, dgamma_, width, pipe_);
        gammaQue_.FreeTensor(gammaT_);
    }

    // Pass 2 over one chunk of the group: dx = rstd * (dy * gamma - xhat * mean).
    __aicore__ inline void DxChunk(uint64_t row, uint32_t n, uint32_t col, uint32_t width)
    {
        LoadGamma(col, width);
        CopyIn(row, col, width);
        for (uint32_t r = 0; r < n; ++r) {
            RowChunk rc = TakeRow(width);
            if (r + 1 < n) {
                CopyIn(row + r + 1, col, width);
            }
            LocalTensor<T> dxT = dxQue_.AllocTensor<T>();
            LocalTensor<float> g;  // dy * gamma, then dx in fp32
            if constexpr (IsFloat<T>()) {
                g = dxT;
            } else {
                g = rc.g;
            }
            Mul(g, rc.dy, gammaF32_, width);
            VectorBarrier();
            Muls(rc.x, rc.x, rstdRow_[r] * mean_[r], width);  // xhat * mean
            VectorBarrier();
            Sub(g, g, rc.x, width);
            VectorBarrier();
            Muls(g, g, rstdRow_[r], width);
            VectorBarrier();
            if constexpr (!IsFloat<T>()) {
                Cast(dxT, g, RoundMode::CAST_RINT, width);
                VectorBarrier();
            }
            DropRow(rc);
            dxQue_.EnQue(dxT);
            dxT = dxQue_.DeQue<T>();
            StoreRows(gm_.dx[(row + r) * t_.cols + col], dxT, 1, width, width, t_.chunkCols);
            dxQue_.FreeTensor(dxT);
        }
        gammaQue_.FreeTensor(gammaT_);
    }

    TQue<QuePosition::VECIN, 2> dyQue_, xQue_;
    TQue<QuePosition::VECIN, 1> gammaQue_, rstdQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> dgammaBuf_, sumBuf_, gammaF32Buf_, dyF32Buf_, xF32Buf_, gBuf_;
    LocalTensor<T> gammaT_;
    LocalTensor<float> gammaF32_, dgamma_;
    float rstdRow_[kMaxGroupRows];
    float mean_[kMaxGroupRows];
};

}  // namespace anchor
