// SPDX-License-Identifier: BSD-3-Clause
// Split-D (cols > 6080): a core's rows in groups of 32, each row in chunks of ubFactor (4096)
// columns, two passes per group. Pass 1, chunk by chunk: gamma loaded and widened, then per row dy
// and x loaded, rstd read by the scalar unit (V -> S, S -> V), dgamma and the row's partial sum of
// dy * gamma * xhat computed (the sum read back by the scalar unit and stored into a UB array of the
// group's sums); after the chunk its dgamma part is added atomically into GM (or into the core's
// workspace row) and the group's sums accumulated. Pass 2, chunk by chunk again: dy and x read a
// second time, rstd and the row mean read by the scalar unit, dx computed and stored. dy, x and dx
// are double buffered; gamma and dgamma have one buffer. Every vector pass is followed by a barrier.
#pragma once
#include "anchor_common.h"

namespace rmsnorm_backward::anchor {

template <typename T>
class AnchorSplitD {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        mine_ = RowsOf(t_);
        gm_.Init(dy, x, rstd, gamma, dx, dgamma, workspace, t_, mine_);
        const bool zeroes = t_.deterministic || GetBlockIdx() == 0;
        if (zeroes) {
            TBuf<QuePosition::VECCALC> zeros;
            pipe_->InitBuffer(zeros, kZeroFloats * sizeof(float));
            if (t_.deterministic) {
                ZeroGm(gm_.ownRow, t_.colAlign, zeros.Get<float>());
            } else {
                ZeroGm(gm_.dgamma, t_.cols, zeros.Get<float>());
            }
            pipe_->Reset();
        }
        SyncAll();
        const uint32_t bytes = t_.ubFactor * sizeof(float);
        pipe_->InitBuffer(dyQue_, 2, bytes);
        pipe_->InitBuffer(xQue_, 2, bytes);
        pipe_->InitBuffer(rstdQue_, 1, kGroupRows * sizeof(float));
        pipe_->InitBuffer(gammaQue_, 1, bytes);
        pipe_->InitBuffer(dxQue_, 2, bytes);
        pipe_->InitBuffer(dgammaQue_, 1, bytes);
        pipe_->InitBuffer(meanBuf_, kGroupRows * sizeof(float));
        pipe_->InitBuffer(partBuf_, kGroupRows * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t first = 0; first < mine_.count; first += kGroupRows) {
            Group(first, Min(kGroupRows, mine_.count - first));
        }
        if (t_.deterministic) {
            SyncAll();
            LocalTensor<float> rows = xQue_.AllocTensor<float>();
            LocalTensor<float> acc = dyQue_.AllocTensor<float>();
            FinalSum(t_, gm_.workspace, gm_.dgamma, rows, acc);
            xQue_.FreeTensor(rows);
            dyQue_.FreeTensor(acc);
        }
    }

private:
    __aicore__ inline void Group(uint32_t first, uint32_t n)
    {
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        DataCopyPad(rstd, gm_.rstd[first], DataCopyExtParams(1, n * sizeof(float), 0, 0, 0),
                    DataCopyPadExtParams<float>(true, 0, 0, 0.0f));
        rstdQue_.EnQue(rstd);
        rstd = rstdQue_.DeQue<float>();
        LocalTensor<float> mean = meanBuf_.Get<float>();
        Duplicate(mean, 0.0f, n);
        PipeBarrier<PIPE_V>();
        for (uint32_t col = 0; col < t_.cols; col += t_.ubFactor) {
            SumChunk(first, n, col, Min(t_.ubFactor, t_.cols - col), rstd, mean);
        }
        Muls(mean, mean, t_.avgFactor, n);
        PipeBarrier<PIPE_V>();
        for (uint32_t col = 0; col < t_.cols; col += t_.ubFactor) {
            DxChunk(first, n, col, Min(t_.ubFactor, t_.cols - col), rstd, mean);
        }
        rstdQue_.FreeTensor(rstd);
    }

    __aicore__ inline LocalTensor<float> LoadGamma(uint32_t col, uint32_t width)
    {
        LocalTensor<T> gamma = gammaQue_.AllocTensor<T>();
        LoadRows(IsFloat<T>() ? gamma : gamma[t_.ubFactor], gm_.gamma[col], 1, width);
        gammaQue_.EnQue(gamma);
        LocalTensor<float> wide = gammaQue_.DeQue<float>();
        Widen<T>(wide, t_.ubFactor, width);
        return wide;
    }

    __aicore__ inline void CopyIn(uint32_t row, uint32_t col, uint32_t width)
    {
        LocalTensor<T> x = xQue_.AllocTensor<T>();
        LocalTensor<T> dy = dyQue_.AllocTensor<T>();
        const uint64_t at = uint64_t(row) * t_.cols + col;
        const uint32_t upper = IsFloat<T>() ? 0 : t_.ubFactor;
        LoadRows(x[upper], gm_.x[at], 1, width);
        LoadRows(dy[upper], gm_.dy[at], 1, width);
        xQue_.EnQue(x);
        dyQue_.EnQue(dy);
    }

    // Pass 1 over one chunk of the group's rows: dgamma's part and the rows' partial sums.
    __aicore__ inline void SumChunk(uint32_t first, uint32_t n, uint32_t col, uint32_t width,
                                    const LocalTensor<float> &rstd, const LocalTensor<float> &mean)
    {
        LocalTensor<float> gamma = LoadGamma(col, width);
        LocalTensor<float> dgamma = dgammaQue_.AllocTensor<float>();
        Duplicate(dgamma, 0.0f, width);
        PipeBarrier<PIPE_V>();
        LocalTensor<float> part = partBuf_.Get<float>();
        for (uint32_t r = 0; r < n; ++r) {
            CopyIn(first + r, col, width);
            Handshake<HardEvent::V_S>();
            const float rstdRow = rstd.GetValue(r);
            Handshake<HardEvent::S_V>();
            LocalTensor<float> x = xQue_.DeQue<float>();
            Widen<T>(x, t_.ubFactor, width);
            Muls(x, x, rstdRow, width);
            PipeBarrier<PIPE_V>();
            LocalTensor<float> dy = dyQue_.DeQue<float>();
            Widen<T>(dy, t_.ubFactor, width);
            Mul(x, dy, x, width);
            PipeBarrier<PIPE_V>();
            Add(dgamma, dgamma, x, width);
            PipeBarrier<PIPE_V>();
            Mul(x, x, gamma, width);
            PipeBarrier<PIPE_V>();
            part.SetValue(r, HalvingSum(x, width));
            Handshake<HardEvent::S_V>();
            xQue_.FreeTensor(x);
            dyQue_.FreeTensor(dy);
        }
        gammaQue_.FreeTensor(gamma);
        dgammaQue_.EnQue(dgamma);
        LocalTensor<float> out = dgammaQue_.DeQue<float>();
        SetAtomicAdd<float>();
        DataCopyPad(t_.deterministic ? gm_.ownRow[col] : gm_.dgamma[col], out,
                    DataCopyExtParams(1, width * sizeof(float), 0, 0, 0));
        SetAtomicNone();
        dgammaQue_.FreeTensor(out);
        Add(mean, mean, part, n);
        PipeBarrier<PIPE_V>();
    }

    // Pass 2 over one chunk: dy and x again, dx = (dy * gamma - xhat * mean) * rstd.
    __aicore__ inline void DxChunk(uint32_t first, uint32_t n, uint32_t col, uint32_t width,
                                   const LocalTensor<float> &rstd, const LocalTensor<float> &mean)
    {
        LocalTensor<float> gamma = LoadGamma(col, width);
        for (uint32_t r = 0; r < n; ++r) {
            CopyIn(first + r, col, width);
            Handshake<HardEvent::V_S>();
            const float rstdRow = rstd.GetValue(r);
            const float meanRow = mean.GetValue(r);
            Handshake<HardEvent::S_V>();
            LocalTensor<float> x = xQue_.DeQue<float>();
            Widen<T>(x, t_.ubFactor, width);
            Muls(x, x, rstdRow, width);
            PipeBarrier<PIPE_V>();
            Muls(x, x, meanRow, width);
            LocalTensor<float> dy = dyQue_.DeQue<float>();
            Widen<T>(dy, t_.ubFactor, width);
            Mul(dy, dy, gamma, width);
            PipeBarrier<PIPE_V>();
            LocalTensor<float> dx = dxQue_.AllocTensor<float>();
            Sub(dx, dy, x, width);
            PipeBarrier<PIPE_V>();
            Muls(dx, dx, rstdRow, width);
            PipeBarrier<PIPE_V>();
            Narrow<T>(dx, width);
            xQue_.FreeTensor(x);
            dyQue_.FreeTensor(dy);
            dxQue_.EnQue(dx);
            LocalTensor<T> out = dxQue_.DeQue<T>();
            DataCopyPad(gm_.dx[uint64_t(first + r) * t_.cols + col], out,
                        DataCopyExtParams(1, width * sizeof(T), 0, 0, 0));
            dxQue_.FreeTensor(out);
        }
        gammaQue_.FreeTensor(gamma);
    }

    AnchorTiling t_;
    TPipe *pipe_ = nullptr;
    CoreRows mine_{0, 0};
    AnchorGm<T> gm_;
    TQue<QuePosition::VECIN, 1> dyQue_, xQue_, rstdQue_, gammaQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_, dgammaQue_;
    TBuf<QuePosition::VECCALC> meanBuf_, partBuf_;
};

}  // namespace rmsnorm_backward::anchor
