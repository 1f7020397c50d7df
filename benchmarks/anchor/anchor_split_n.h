// SPDX-License-Identifier: BSD-3-Clause
// Split-N (cols <= 6080): a core's rows in UB loops of ubFactor rows. Every buffer is fp32 wide
// (16-bit data lands in its upper half and is widened in place). dy, x, rstd and dx are double
// buffered; gamma and dgamma have one buffer. Above colAlign 640 each row of a loop is loaded,
// computed (rstd read by the scalar unit between a V -> S and an S -> V handshake; the row sum read
// back the same way) and stored on its own; at colAlign <= 640 (small-D) the loop's rows are loaded
// and computed as one tile, per-row factors and gamma materialised by BroadCasts of the whole tile.
// Every vector pass is followed by a vector barrier. dgamma: added atomically into GM once per core
// (block 0 zeroes it before a SyncAll), or written to the core's workspace row and summed after a
// SyncAll (FinalSum).
#pragma once
#include "anchor_common.h"

namespace rmsnorm_backward::anchor {

template <typename T>
class AnchorSplitN {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        mine_ = RowsOf(t_);
        smallD_ = t_.colAlign <= kSmallDCols;
        gm_.Init(dy, x, rstd, gamma, dx, dgamma, workspace, t_, mine_);
        if (!t_.deterministic) {
            if (GetBlockIdx() == 0) {
                TBuf<QuePosition::VECCALC> zeros;
                pipe_->InitBuffer(zeros, kZeroFloats * sizeof(float));
                ZeroGm(gm_.dgamma, t_.cols, zeros.Get<float>());
                pipe_->Reset();
            }
            SyncAll();
        }
        const uint32_t tile = t_.ubFactor * t_.colAlign;
        const uint32_t bytes = (tile > t_.blockDim * kTaskCols ? tile : t_.blockDim * kTaskCols) * sizeof(float);
        pipe_->InitBuffer(dyQue_, 2, bytes);
        pipe_->InitBuffer(xQue_, 2, bytes);
        pipe_->InitBuffer(rstdQue_, 2, t_.rstdLen * sizeof(float));
        pipe_->InitBuffer(gammaQue_, 1, t_.colAlign * sizeof(float));
        pipe_->InitBuffer(dxQue_, 2, bytes);
        pipe_->InitBuffer(dgammaQue_, 1, t_.colAlign * sizeof(float));
        if (smallD_) {
            pipe_->InitBuffer(tmpBuf_, t_.ubFactor * kFloatsPerRepeat * sizeof(float));
            pipe_->InitBuffer(meanBuf_, t_.ubFactor * sizeof(float));
        }
    }

    __aicore__ inline void Process()
    {
        LoadGamma();
        LocalTensor<float> gamma = gammaQue_.DeQue<float>();
        Widen<T>(gamma, t_.colAlign, t_.colAlign);
        LocalTensor<float> dgamma = dgammaQue_.AllocTensor<float>();
        Duplicate(dgamma, 0.0f, t_.colAlign);
        PipeBarrier<PIPE_V>();
        for (uint32_t first = 0; first < mine_.count; first += t_.ubFactor) {
            const uint32_t n = Min(t_.ubFactor, mine_.count - first);
            if (smallD_) {
                CopyIn(first, n);
                ComputeTile(n, gamma, dgamma);
                CopyOut(first, n);
            } else {
                for (uint32_t r = 0; r < n; ++r) {
                    CopyIn(first + r, 1);
                    ComputeRow(gamma, dgamma);
                    CopyOut(first + r, 1);
                }
            }
        }
        gammaQue_.FreeTensor(gamma);
        dgammaQue_.EnQue(dgamma);
        LocalTensor<float> part = dgammaQue_.DeQue<float>();
        const DataCopyExtParams row(1, t_.cols * sizeof(float), 0, 0, 0);
        if (t_.deterministic) {
            DataCopyPad(gm_.ownRow, part, row);
            dgammaQue_.FreeTensor(part);
            SyncAll();
            LocalTensor<float> rows = xQue_.AllocTensor<float>();
            LocalTensor<float> acc = dyQue_.AllocTensor<float>();
            FinalSum(t_, gm_.workspace, gm_.dgamma, rows, acc);
            xQue_.FreeTensor(rows);
            dyQue_.FreeTensor(acc);
        } else {
            SetAtomicAdd<float>();
            DataCopyPad(gm_.dgamma, part, row);
            SetAtomicNone();
            dgammaQue_.FreeTensor(part);
        }
    }

private:
    __aicore__ inline void LoadGamma()
    {
        LocalTensor<T> gamma = gammaQue_.AllocTensor<T>();
        LoadRows(IsFloat<T>() ? gamma : gamma[t_.colAlign], gm_.gamma, 1, t_.cols);
        gammaQue_.EnQue(gamma);
    }

    __aicore__ inline void CopyIn(uint32_t row, uint32_t n)
    {
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        LocalTensor<T> x = xQue_.AllocTensor<T>();
        LocalTensor<T> dy = dyQue_.AllocTensor<T>();
        DataCopyPad(rstd, gm_.rstd[row], DataCopyExtParams(1, n * sizeof(float), 0, 0, 0),
                    DataCopyPadExtParams<float>(true, 0, 0, 0.0f));
        const uint32_t upper = IsFloat<T>() ? 0 : n * t_.colAlign;
        LoadRows(x[upper], gm_.x[uint64_t(row) * t_.cols], n, t_.cols);
        LoadRows(dy[upper], gm_.dy[uint64_t(row) * t_.cols], n, t_.cols);
        rstdQue_.EnQue(rstd);
        xQue_.EnQue(x);
        dyQue_.EnQue(dy);
    }

    __aicore__ inline void CopyOut(uint32_t row, uint32_t n)
    {
        LocalTensor<T> dx = dxQue_.DeQue<T>();
        DataCopyPad(gm_.dx[uint64_t(row) * t_.cols], dx, DataCopyExtParams(uint16_t(n), t_.cols * sizeof(T), 0, 0, 0));
        dxQue_.FreeTensor(dx);
    }

    // One row: xhat = x * rstd; dgamma += dy * xhat; mean = sum(dy * gamma * xhat) / cols;
    // dx = (dy * gamma - xhat * mean) * rstd.
    __aicore__ inline void ComputeRow(const LocalTensor<float> &gamma, const LocalTensor<float> &dgamma)
    {
        const uint32_t C = t_.colAlign;
        LocalTensor<float> rstd = rstdQue_.DeQue<float>();
        Handshake<HardEvent::V_S>();
        const float rstdRow = rstd.GetValue(0);
        const event_t scalarDone = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(scalarDone);
        rstdQue_.FreeTensor(rstd);
        LocalTensor<float> x = xQue_.DeQue<float>();
        Widen<T>(x, C, C);
        WaitFlag<HardEvent::S_V>(scalarDone);
        Muls(x, x, rstdRow, C);
        PipeBarrier<PIPE_V>();
        LocalTensor<float> dy = dyQue_.DeQue<float>();
        Widen<T>(dy, C, C);
        LocalTensor<float> dx = dxQue_.AllocTensor<float>();
        Mul(dx, dy, x, C);
        PipeBarrier<PIPE_V>();
        Add(dgamma, dgamma, dx, C);
        Mul(dy, dy, gamma, C);
        PipeBarrier<PIPE_V>();
        Mul(dx, dy, x, C);
        PipeBarrier<PIPE_V>();
        const float mean = HalvingSum(dx, t_.cols) * t_.avgFactor;
        Handshake<HardEvent::S_V>();
        Muls(dx, x, mean, C);
        PipeBarrier<PIPE_V>();
        Sub(dx, dy, dx, C);
        PipeBarrier<PIPE_V>();
        Muls(dx, dx, rstdRow, C);
        PipeBarrier<PIPE_V>();
        Narrow<T>(dx, C);
        xQue_.FreeTensor(x);
        dyQue_.FreeTensor(dy);
        dxQue_.EnQue(dx);
    }

    // A tile of n rows (small-D): the same terms over the whole tile, per-row factors broadcast.
    __aicore__ inline void ComputeTile(uint32_t n, const LocalTensor<float> &gamma, const LocalTensor<float> &dgamma)
    {
        const uint32_t C = t_.colAlign, count = n * C;
        LocalTensor<float> tmp = tmpBuf_.Get<float>();
        LocalTensor<float> rstd = rstdQue_.DeQue<float>();
        LocalTensor<float> dx = dxQue_.AllocTensor<float>();
        BroadcastRows(dx, rstd, n, tmp);
        LocalTensor<float> x = xQue_.DeQue<float>();
        Widen<T>(x, count, count);
        Mul(x, x, dx, count);  // xhat
        PipeBarrier<PIPE_V>();
        LocalTensor<float> dy = dyQue_.DeQue<float>();
        Widen<T>(dy, count, count);
        Mul(dx, dy, x, count);
        PipeBarrier<PIPE_V>();
        for (uint32_t r = 0; r < n; ++r) {
            Add(dgamma, dx[r * C], dgamma, C);
            PipeBarrier<PIPE_V>();
        }
        BroadcastGamma(dx, gamma, n, tmp);
        Mul(dy, dy, dx, count);  // dy * gamma
        PipeBarrier<PIPE_V>();
        Mul(dx, dy, x, count);
        PipeBarrier<PIPE_V>();
        LocalTensor<float> mean = meanBuf_.Get<float>();
        RowSums(mean, dx, tmp, n);
        PipeBarrier<PIPE_V>();
        Muls(mean, mean, t_.avgFactor, n);
        PipeBarrier<PIPE_V>();
        BroadcastRows(dx, mean, n, tmp);
        Mul(dx, x, dx, count);
        PipeBarrier<PIPE_V>();
        Sub(dx, dy, dx, count);
        PipeBarrier<PIPE_V>();
        BroadcastRows(dy, rstd, n, tmp);
        rstdQue_.FreeTensor(rstd);
        Mul(dx, dx, dy, count);
        PipeBarrier<PIPE_V>();
        Narrow<T>(dx, count);
        xQue_.FreeTensor(x);
        dyQue_.FreeTensor(dy);
        dxQue_.EnQue(dx);
    }

    // dst (n x colAlign) = values[r] in every column of row r: one value as a scalar Duplicate; else
    // Brcb of the values into one block per row in `tmp`, then per 64 columns a Copy of n repeats.
    __aicore__ inline void BroadcastRows(const LocalTensor<float> &dst, const LocalTensor<float> &values, uint32_t n,
                                         const LocalTensor<float> &tmp)
    {
        const uint32_t C = t_.colAlign;
        if (n == 1) {
            Handshake<HardEvent::V_S>();
            const float v = values.GetValue(0);
            Handshake<HardEvent::S_V>();
            Duplicate(dst, v, C);
            PipeBarrier<PIPE_V>();
            return;
        }
        Brcb(tmp, values, (n + kFloatsPerBlock - 1) / kFloatsPerBlock, BrcbRepeatParams(1, 8));
        PipeBarrier<PIPE_V>();
        for (uint32_t first = 0; first < n; first += kMaxRepeats) {
            const uint32_t m = Min(kMaxRepeats, n - first);
            for (uint32_t c = 0; c < C; c += kFloatsPerRepeat) {
                Copy(dst[first * C + c], tmp[first * kFloatsPerBlock], uint64_t(Min(kFloatsPerRepeat, C - c)), uint8_t(m),
                     CopyRepeatParams(1, 0, uint16_t(C / kFloatsPerBlock), 1));
            }
        }
        PipeBarrier<PIPE_V>();
    }

    // dst (n x colAlign) = gamma in every row: one row as a plain Copy; else a zeroed block, then per
    // 64 columns a Copy of n repeats reading gamma with a zero repeat stride.
    __aicore__ inline void BroadcastGamma(const LocalTensor<float> &dst, const LocalTensor<float> &gamma, uint32_t n,
                                          const LocalTensor<float> &tmp)
    {
        const uint32_t C = t_.colAlign;
        if (n > 1) {
            Duplicate(tmp.ReinterpretCast<uint16_t>(), uint16_t(0), 16);
            PipeBarrier<PIPE_V>();
        }
        for (uint32_t first = 0; first < n; first += kMaxRepeats) {
            const uint32_t m = Min(kMaxRepeats, n - first);
            for (uint32_t c = 0; c < C; c += kFloatsPerRepeat) {
                Copy(dst[first * C + c], gamma[c], uint64_t(Min(kFloatsPerRepeat, C - c)), uint8_t(m),
                     CopyRepeatParams(1, 1, uint16_t(C / kFloatsPerBlock), 0));
            }
        }
        PipeBarrier<PIPE_V>();
    }

    // sums[r] = the sum of row r's first cols values: per 64 columns an Add of n repeats into `tmp`
    // (one repeat per row, zeroed first), then one WholeReduceSum of n repeats.
    __aicore__ inline void RowSums(const LocalTensor<float> &sums, const LocalTensor<float> &values,
                                   const LocalTensor<float> &tmp, uint32_t n)
    {
        const uint32_t C = t_.colAlign;
        const uint8_t rowBlocks = uint8_t(C / kFloatsPerBlock);
        Duplicate(tmp, 0.0f, n * kFloatsPerRepeat);
        PipeBarrier<PIPE_V>();
        for (uint32_t first = 0; first < n; first += kMaxRepeats) {
            const uint32_t m = Min(kMaxRepeats, n - first);
            const LocalTensor<float> acc = tmp[first * kFloatsPerRepeat];
            for (uint32_t c = 0; c < t_.cols; c += kFloatsPerRepeat) {
                Add(acc, values[first * C + c], acc, uint64_t(Min(kFloatsPerRepeat, t_.cols - c)), uint8_t(m),
                    BinaryRepeatParams(1, 1, 1, 8, rowBlocks, 8));
                PipeBarrier<PIPE_V>();
            }
            WholeReduceSum(sums[first], acc, int32_t(kFloatsPerRepeat), int32_t(m), 1, 1, 8);
        }
    }

    AnchorTiling t_;
    TPipe *pipe_ = nullptr;
    CoreRows mine_{0, 0};
    bool smallD_ = false;
    AnchorGm<T> gm_;
    TQue<QuePosition::VECIN, 1> dyQue_, xQue_, rstdQue_, gammaQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_, dgammaQue_;
    TBuf<QuePosition::VECCALC> tmpBuf_, meanBuf_;
};

}  // namespace rmsnorm_backward::anchor
