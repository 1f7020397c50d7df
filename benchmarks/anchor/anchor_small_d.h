// Small-D (rows of at most 640 columns filling whole 32-byte blocks): tiles of
// (195584 - 10C) / (24C + 268) rows. The element-wise passes cover the whole tile, per-row factors
// (rstd, the mean) broadcast to one 32-byte block per row by Brcb and read with a zero block stride,
// gamma read with a zero repeat stride; the row sums fold each row to one repeat and end in one
// WholeReduceSum over the tile; dgamma is one dependent Add per row. Every pass is followed by a
// vector barrier. The next tile's load is issued once this tile's row sums are done.
//
// UB (S = rowStride, R = tileRows, s = sizeof(T)): dy, x queues 2 x R*S*s each; rstd queue 2 x R*4;
// dx R*S*s; rstd and mean broadcast R*32 each (R rounded up to 8); row sums R*4; gamma, dgamma S*4 each; 16-bit only:
// dy, x and dy*gamma in fp32, R*S*4 each.
#pragma once
#include "anchor_common.h"

namespace anchor {

constexpr uint32_t kMaxRepeats = 255;

template <typename T>
class AnchorSmallD {
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
        const uint32_t perRow = RoundUp(t_.tileRows * sizeof(float), kBlockBytes);
        pipe_->InitBuffer(dyQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(xQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(rstdQue_, 2, perRow);
        pipe_->InitBuffer(dxQue_, 1, tile * sizeof(T));
        const uint32_t blocks = RoundUp(t_.tileRows, kFloatsPerBlock()) * kBlockBytes;  // Brcb fills 8 per repeat
        pipe_->InitBuffer(rstdBlocksBuf_, blocks);
        pipe_->InitBuffer(meanBlocksBuf_, blocks);
        pipe_->InitBuffer(sumsBuf_, perRow);
        pipe_->InitBuffer(gammaBuf_, t_.rowStride * sizeof(float));
        pipe_->InitBuffer(dgammaBuf_, t_.rowStride * sizeof(float));
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(dyF32Buf_, tile * sizeof(float));
            pipe_->InitBuffer(xF32Buf_, tile * sizeof(float));
            pipe_->InitBuffer(gBuf_, tile * sizeof(float));
        }
        rowBlocks_ = t_.rowStride * sizeof(float) / kBlockBytes;
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

    // dst = a * b over n rows, 64 columns at a time, b's block per row (blocks: one block per row,
    // zero block stride) or b's one row for every row (rows: zero repeat stride).
    __aicore__ inline void RowsTimes(const LocalTensor<float> &dst, const LocalTensor<float> &a,
                                     const LocalTensor<float> &b, uint32_t n, bool perRowBlock)
    {
        for (uint32_t first = 0; first < n; first += kMaxRepeats) {
            const uint32_t m = n - first < kMaxRepeats ? n - first : kMaxRepeats;
            for (uint32_t c = 0; c < t_.cols; c += kFloatsPerRepeat) {
                const uint32_t lanes = t_.cols - c < kFloatsPerRepeat ? t_.cols - c : kFloatsPerRepeat;
                const uint32_t at = first * t_.rowStride + c;
                const BinaryRepeatParams p(1, 1, perRowBlock ? 0 : 1, rowBlocks_, rowBlocks_, perRowBlock ? 1 : 0);
                Mul(dst[at], a[at], perRowBlock ? b[first * kBlockBytes / sizeof(float)] : b[c], lanes, m, p);
            }
        }
        VectorBarrier();
    }

    // sums[r] = the sum of row r of `values` (destroyed): fold each row onto its first 64 lanes, then
    // one WholeReduceSum per 255 rows.
    __aicore__ inline void RowSums(const LocalTensor<float> &sums, const LocalTensor<float> &values, uint32_t n)
    {
        for (uint32_t first = 0; first < n; first += kMaxRepeats) {
            const uint32_t m = n - first < kMaxRepeats ? n - first : kMaxRepeats;
            const uint32_t at = first * t_.rowStride;
            for (uint32_t c = kFloatsPerRepeat; c < t_.cols; c += kFloatsPerRepeat) {
                const uint32_t lanes = t_.cols - c < kFloatsPerRepeat ? t_.cols - c : kFloatsPerRepeat;
                Add(values[at], values[at], values[at + c], lanes, m,
                    BinaryRepeatParams(1, 1, 1, rowBlocks_, rowBlocks_, rowBlocks_));
                VectorBarrier();
            }
            const uint32_t lanes = t_.cols < kFloatsPerRepeat ? t_.cols : kFloatsPerRepeat;
            WholeReduceSum(sums[first], values[at], lanes, m, 1, 1, rowBlocks_);
            VectorBarrier();
        }
    }

    __aicore__ inline void Broadcast(const LocalTensor<float> &blocks, const LocalTensor<float> &values, uint32_t n)
    {
        Brcb(blocks, values, (n + kFloatsPerBlock() - 1) / kFloatsPerBlock(), BrcbRepeatParams(1, 8));
        VectorBarrier();
    }
    static constexpr uint32_t kFloatsPerBlock() { return kBlockBytes / sizeof(float); }

    __aicore__ inline void ComputeTile(uint64_t row, uint32_t n, const RowRange &mine)
    {
        LocalTensor<T> dyT = dyQue_.DeQue<T>();
        LocalTensor<T> xT = xQue_.DeQue<T>();
        LocalTensor<float> rstd = rstdQue_.DeQue<float>();
        LocalTensor<T> dxT = dxQue_.AllocTensor<T>();
        const uint32_t count = n * t_.rowStride;
        LocalTensor<float> dy, x, g;
        if constexpr (IsFloat<T>()) {
            dy = dyT;
            x = xT;
            g = dxT;
        } else {
            dy = dyF32Buf_.Get<float>();
            x = xF32Buf_.Get<float>();
            g = gBuf_.Get<float>();
            Cast(dy, dyT, RoundMode::CAST_NONE, count);
            VectorBarrier();
            Cast(x, xT, RoundMode::CAST_NONE, count);
            VectorBarrier();
        }
        LocalTensor<float> rstdBlocks = rstdBlocksBuf_.Get<float>();
        LocalTensor<float> meanBlocks = meanBlocksBuf_.Get<float>();
        LocalTensor<float> sums = sumsBuf_.Get<float>();
        Broadcast(rstdBlocks, rstd, n);
        RowsTimes(x, x, rstdBlocks, n, true);  // xhat
        RowsTimes(g, dy, gammaF32_, n, false);  // dy * gamma
        Mul(dy, dy, x, count);                  // dy * xhat
        VectorBarrier();
        for (uint32_t r = 0; r < n; ++r) {
            Add(dgamma_, dgamma_, dy[r * t_.rowStride], t_.cols);
            VectorBarrier();
        }
        Mul(dy, g, x, count);
        VectorBarrier();
        RowSums(sums, dy, n);
        const uint64_t next = row + t_.tileRows;
        if (next < mine.end) {
            CopyIn(next, Rows(mine, next));
        }
        Muls(sums, sums, t_.invCols, n);
        VectorBarrier();
        Broadcast(meanBlocks, sums, n);
        RowsTimes(x, x, meanBlocks, n, true);   // xhat * mean
        Sub(g, g, x, count);
        VectorBarrier();
        if constexpr (IsFloat<T>()) {
            RowsTimes(g, g, rstdBlocks, n, true);
        } else {
            RowsTimes(dy, g, rstdBlocks, n, true);
            Cast(dxT, dy, RoundMode::CAST_RINT, count);
            VectorBarrier();
        }
        dxQue_.EnQue(dxT);
        dyQue_.FreeTensor(dyT);
        xQue_.FreeTensor(xT);
        rstdQue_.FreeTensor(rstd);
        dxT = dxQue_.DeQue<T>();
        StoreRows(dx_[row * t_.cols], dxT, n, t_.cols, t_.cols, t_.rowStride);
        dxQue_.FreeTensor(dxT);
    }

    AnchorTiling t_;
    TPipe *pipe_ = nullptr;
    GlobalTensor<T> dy_, x_, dx_, gamma_;
    GlobalTensor<float> rstd_;
    DgammaGm out_;
    TQue<QuePosition::VECIN, 2> dyQue_, xQue_, rstdQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> rstdBlocksBuf_, meanBlocksBuf_, sumsBuf_, gammaBuf_, dgammaBuf_, dyF32Buf_, xF32Buf_,
        gBuf_;
    LocalTensor<float> gammaF32_, dgamma_;
    uint32_t rowBlocks_ = 0;
};

}  // namespace anchor
