// Split-N (cols <= 6080 outside small-D): a core's rows go through UB one row at a time (tileRows
// is 1; the loops take any tile), each computed on its own: rstd read by the scalar unit, about
// twelve fp32-width passes each behind a vector barrier, a halving-tree row sum the scalar unit
// waits for, and one dependent Add into dgamma. The next row's load is issued only once this row's
// sum is known.
//
// UB (S = rowStride, R = tileRows, s = sizeof(T)):
//   dy, x queues 2 x R*S*s each; rstd queue 2 x R*4; dx R*S*s; gamma, dgamma S*4 each;
//   16-bit only: dy, x in fp32 R*S*4 each and one fp32 row for dy*gamma.
#pragma once
#include "anchor_common.h"

namespace anchor {

template <typename T>
class AnchorSplitN {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        dy_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dy), t_.rows * t_.cols);
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(x), t_.rows * t_.cols);
        dx_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dx), t_.rows * t_.cols);
        rstd_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(rstd), t_.rows);
        gamma_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(gamma), t_.cols);
        out_.Init(dgamma, workspace, t_);
        const uint32_t tile = t_.tileRows * t_.rowStride;
        pipe_->InitBuffer(dyQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(xQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(rstdQue_, 2, RoundUp(t_.tileRows * sizeof(float), kBlockBytes));
        pipe_->InitBuffer(dxQue_, 1, tile * sizeof(T));
        pipe_->InitBuffer(gammaBuf_, t_.rowStride * sizeof(float));
        pipe_->InitBuffer(dgammaBuf_, t_.rowStride * sizeof(float));
        pipe_->InitBuffer(sumBuf_, kBlockBytes);
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(dyF32Buf_, tile * sizeof(float));
            pipe_->InitBuffer(xF32Buf_, tile * sizeof(float));
            pipe_->InitBuffer(gBuf_, t_.rowStride * sizeof(float));
        }
    }

    __aicore__ inline void Process()
    {
        dgamma_ = dgammaBuf_.Get<float>();
        out_.Zero(t_, dgamma_, t_.cols, pipe_);
        LoadGamma();
        Duplicate(dgamma_, 0.0f, t_.cols);
        VectorBarrier();
        const RowRange mine = CoreRows(t_);
        if (mine.begin < mine.end) {
            CopyIn(mine.begin, Rows(mine, mine.begin));
        }
        for (uint64_t row = mine.begin; row < mine.end; row += t_.tileRows) {
            ComputeTile(row, Rows(mine, row), mine);
        }
        out_.AddPart(0, dgamma_, t_.cols, pipe_);
        if (t_.deterministic) {
            FinalSum(t_, out_, pipe_);
        }
    }

private:
    __aicore__ inline uint32_t Rows(const RowRange &range, uint64_t row) const
    {
        const uint64_t left = range.end - row;
        return left < t_.tileRows ? uint32_t(left) : t_.tileRows;
    }

    __aicore__ inline void LoadGamma()
    {
        gammaF32_ = gammaBuf_.Get<float>();
        if constexpr (IsFloat<T>()) {
            LoadRows(gammaF32_, gamma_, 1, t_.cols, t_.cols, t_.rowStride);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            LocalTensor<T> staged = dyF32Buf_.Get<T>();  // free until the first tile is widened
            LoadRows(staged, gamma_, 1, t_.cols, t_.cols, t_.rowStride);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Cast(gammaF32_, staged, RoundMode::CAST_NONE, t_.cols);
            VectorBarrier();
        }
    }

    __aicore__ inline void CopyIn(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dy = dyQue_.AllocTensor<T>();
        LocalTensor<T> x = xQue_.AllocTensor<T>();
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        LoadRows(dy, dy_[row * t_.cols], n, t_.cols, t_.cols, t_.rowStride);
        LoadRows(x, x_[row * t_.cols], n, t_.cols, t_.cols, t_.rowStride);
        LoadRows(rstd, rstd_[row], 1, n, n, RoundUp(n, kBlockBytes / sizeof(float)));
        dyQue_.EnQue(dy);
        xQue_.EnQue(x);
        rstdQue_.EnQue(rstd);
    }

    __aicore__ inline void ComputeTile(uint64_t row, uint32_t n, const RowRange &mine)
    {
        LocalTensor<T> dyT = dyQue_.DeQue<T>();
        LocalTensor<T> xT = xQue_.DeQue<T>();
        LocalTensor<float> rstd = rstdQue_.DeQue<float>();
        WaitFor<HardEvent::MTE2_S>(pipe_);  // rstd is read by the scalar unit
        LocalTensor<T> dxT = dxQue_.AllocTensor<T>();
        const uint32_t S = t_.rowStride;
        LocalTensor<float> dy, x;
        if constexpr (IsFloat<T>()) {
            dy = dyT;
            x = xT;
        } else {
            dy = dyF32Buf_.Get<float>();
            x = xF32Buf_.Get<float>();
            Cast(dy, dyT, RoundMode::CAST_NONE, n * S);
            VectorBarrier();
            Cast(x, xT, RoundMode::CAST_NONE, n * S);
            VectorBarrier();
        }
        const uint64_t next = row + t_.tileRows;
        for (uint32_t r = 0; r < n; ++r) {
            LocalTensor<float> g;  // dy * gamma, then the row of dx in fp32
            if constexpr (IsFloat<T>()) {
                g = dxT[r * S];
            } else {
                g = gBuf_.Get<float>();
            }
            const float rstdRow = rstd.GetValue(r);
            const float mean = RowTerms(dy[r * S], x[r * S], g, rstdRow) * t_.invCols;
            if (r == 0 && next < mine.end) {
                CopyIn(next, Rows(mine, next));
            }
            Muls(x[r * S], x[r * S], mean, t_.cols);
            VectorBarrier();
            Sub(g, g, x[r * S], t_.cols);
            VectorBarrier();
            if constexpr (IsFloat<T>()) {
                Muls(g, g, rstdRow, t_.cols);
            } else {
                Muls(dy[r * S], g, rstdRow, t_.cols);  // dy's row is spent: it holds dx until the cast
            }
            VectorBarrier();
        }
        if constexpr (!IsFloat<T>()) {
            Cast(dxT, dy, RoundMode::CAST_RINT, n * S);
            VectorBarrier();
        }
        dxQue_.EnQue(dxT);
        dyQue_.FreeTensor(dyT);
        xQue_.FreeTensor(xT);
        rstdQue_.FreeTensor(rstd);
        dxT = dxQue_.DeQue<T>();
        StoreRows(dx_[row * t_.cols], dxT, n, t_.cols, t_.cols, S);
        dxQue_.FreeTensor(dxT);
    }

    // x becomes xhat, g = dy * gamma, dgamma += dy * xhat; returns the row sum of g * xhat.
    __aicore__ inline float RowTerms(const LocalTensor<float> &dy, const LocalTensor<float> &x,
                                     const LocalTensor<float> &g, float rstdRow)
    {
        const uint32_t cols = t_.cols;
        Muls(x, x, rstdRow, cols);
        VectorBarrier();
        Mul(g, dy, gammaF32_, cols);
        VectorBarrier();
        Mul(dy, dy, x, cols);
        VectorBarrier();
        Add(dgamma_, dgamma_, dy, cols);
        VectorBarrier();
        Mul(dy, g, x, cols);
        VectorBarrier();
        return HalvingTreeSum(sumBuf_.Get<float>(), dy, cols, pipe_);
    }

    AnchorTiling t_;
    TPipe *pipe_ = nullptr;
    GlobalTensor<T> dy_, x_, dx_, gamma_;
    GlobalTensor<float> rstd_;
    DgammaGm out_;
    TQue<QuePosition::VECIN, 2> dyQue_, xQue_, rstdQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, sumBuf_, dyF32Buf_, xF32Buf_, gBuf_;
    LocalTensor<float> gammaF32_, dgamma_;
};

}  // namespace anchor
