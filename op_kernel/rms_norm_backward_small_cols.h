// Small cols (row_stride <= 128): tiles of R rows packed back to back (each row zero-padded to S =
// row_stride elements), so every vector instruction covers R*S lanes of many rows instead of one short
// row. Per-row scalars (rstd, the row mean) are spread over their row's lanes with Brcb; row sums
// come from WholeReduceSum, one repeat per row. dgamma accumulates lane-wise in an R x S tile and is
// folded to one row, in row order, at the end of each group.
//
// UB budget (S = row_stride, R = tile_rows, a multiple of 8 up to 248, s = sizeof(T)); checked by the
// tiling (SmallColsUb):
//   buffer                                      elements     bytes
//   dy, x, dx queues                            2 x R*S each 6 * R*S*s
//   rstd queue                                  2 x R        8 * R
//   gamma, dgamma, rstd and mean broadcast, g   R*S each     20 * R*S
//   dy, x widened (16-bit only)                 R*S each     8 * R*S
//   row sums (two halves of a 128-wide row)     2 x R        8 * R
#pragma once
#include "rms_norm_backward_common.h"

namespace rms_norm_backward_impl {

template <typename T>
class RmsNormBackwardSmallCols {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        dgammaAddr_ = dgamma;
        workspace_ = workspace;
        dyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dy), t_.rows * t_.cols);
        xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(x), t_.rows * t_.cols);
        dxGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dx), t_.rows * t_.cols);
        rstdGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(rstd), t_.rows);
        gammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(gamma), t_.cols);
        const uint32_t lanes = t_.tile_rows * t_.row_stride;
        pipe_->InitBuffer(dyQue_, 2, lanes * sizeof(T));
        pipe_->InitBuffer(xQue_, 2, lanes * sizeof(T));
        pipe_->InitBuffer(rstdQue_, 2, t_.tile_rows * sizeof(float));
        pipe_->InitBuffer(dxQue_, 2, lanes * sizeof(T));
        pipe_->InitBuffer(gammaBuf_, lanes * sizeof(float));
        pipe_->InitBuffer(dgammaBuf_, lanes * sizeof(float));
        pipe_->InitBuffer(rstdWideBuf_, lanes * sizeof(float));
        pipe_->InitBuffer(meanWideBuf_, lanes * sizeof(float));
        pipe_->InitBuffer(gBuf_, lanes * sizeof(float));
        if constexpr (!IsFloat()) {
            pipe_->InitBuffer(dyF32Buf_, lanes * sizeof(float));
            pipe_->InitBuffer(xhatBuf_, lanes * sizeof(float));
        }
        pipe_->InitBuffer(sumBuf_, t_.tile_rows * sizeof(float));
        pipe_->InitBuffer(sumHighBuf_, t_.tile_rows * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        LoadGamma();
        const LocalTensor<float> dgamma = dgammaBuf_.Get<float>();
        for (uint32_t g = GetBlockIdx(); g < t_.groups; g += GetBlockNum()) {
            const RowGroup group = GroupRows(t_, g);
            Duplicate(dgamma, 0.0f, t_.tile_rows * t_.row_stride);
            if (group.begin < group.end) {
                CopyIn(group.begin, TileRows(group, group.begin));
            }
            for (uint64_t row = group.begin; row < group.end; row += t_.tile_rows) {
                const uint64_t next = row + t_.tile_rows;
                if (next < group.end) {
                    CopyIn(next, TileRows(group, next));
                }
                Compute(TileRows(group, row));
                CopyOut(row, TileRows(group, row));
            }
            // Fold the tile's rows in row order: the same sum on every core and every run.
            for (uint32_t r = 1; r < t_.tile_rows; ++r) {
                Add(dgamma, dgamma, dgamma[r * t_.row_stride], t_.row_stride);
            }
            GlobalTensor<float> partial;
            partial.SetGlobalBuffer(PartialDgamma(t_, dgammaAddr_, workspace_, g), t_.cols);
            WaitFor<HardEvent::V_MTE3>(pipe_);
            CopyOutPad(partial, dgamma, t_.cols);
            WaitFor<HardEvent::MTE3_V>(pipe_);
        }
    }

private:
    static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

    __aicore__ inline uint32_t TileRows(const RowGroup &group, uint64_t row) const
    {
        const uint64_t left = group.end - row;
        return left < t_.tile_rows ? uint32_t(left) : t_.tile_rows;
    }

    // Rows land S elements apart with their padding lanes zeroed, so whole-row sums see only zeros there.
    __aicore__ inline void CopyInPacked(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t rows)
    {
        const uint8_t pad = uint8_t(t_.row_stride - t_.cols);
        DataCopyPad(dst, src, DataCopyExtParams(rows, t_.cols * sizeof(T), 0, 0, 0),
                    DataCopyPadExtParams<T>(true, 0, pad, T(0)));
    }

    // gamma, widened, repeated on every row of the tile.
    __aicore__ inline void LoadGamma()
    {
        const LocalTensor<float> gammaWide = gammaBuf_.Get<float>();
        const LocalTensor<float> row = gBuf_.Get<float>();
        if constexpr (IsFloat()) {
            CopyInPacked(row, gammaGm_, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            const LocalTensor<T> gammaT = meanWideBuf_.Get<T>();
            CopyInPacked(gammaT, gammaGm_, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Widen(row, gammaT, t_.row_stride);
        }
        for (uint32_t r = 0; r < t_.tile_rows; ++r) {
            Muls(gammaWide[r * t_.row_stride], row, 1.0f, t_.row_stride);
        }
    }

    __aicore__ inline void CopyIn(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = dyQue_.AllocTensor<T>();
        LocalTensor<T> xT = xQue_.AllocTensor<T>();
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        CopyInPacked(dyT, dyGm_[row * t_.cols], n);
        CopyInPacked(xT, xGm_[row * t_.cols], n);
        CopyInPad(rstd, rstdGm_[row], n);
        dyQue_.EnQue(dyT);
        xQue_.EnQue(xT);
        rstdQue_.EnQue(rstd);
    }

    // Spreads values[r] over the S lanes of row r: Brcb fills one 32-byte block per value, and S/8 calls
    // place those blocks at every block of the rows.
    __aicore__ inline void Spread(const LocalTensor<float> &wide, const LocalTensor<float> &values, uint32_t n)
    {
        const uint32_t blocksPerRow = t_.row_stride / kFloatsPerBlock;
        const uint8_t repeats = uint8_t(CeilDiv(n, kFloatsPerBlock));
        for (uint32_t b = 0; b < blocksPerRow; ++b) {
            Brcb(wide[b * kFloatsPerBlock], values, repeats,
                 BrcbRepeatParams{uint16_t(blocksPerRow), uint16_t(blocksPerRow * kFloatsPerBlock)});
        }
    }

    // sums[r] = sum of row r's S lanes: one WholeReduceSum repeat per row (two for rows wider than 64).
    __aicore__ inline void RowSums(const LocalTensor<float> &sums, const LocalTensor<float> &values, uint32_t n)
    {
        const uint32_t S = t_.row_stride;
        const int32_t rowBlocks = int32_t(S / kFloatsPerBlock);
        const int32_t low = int32_t(S < kFloatsPerRepeat ? S : kFloatsPerRepeat);
        WholeReduceSum(sums, values, low, int32_t(n), 1, 1, rowBlocks);
        if (S > kFloatsPerRepeat) {
            const LocalTensor<float> high = sumHighBuf_.Get<float>();
            WholeReduceSum(high, values[kFloatsPerRepeat], int32_t(S - kFloatsPerRepeat), int32_t(n), 1, 1, rowBlocks);
            Add(sums, sums, high, n);
        }
    }

    // xhat = x*rstd, g = dy*gamma, dgamma += dy*xhat, dx = rstd*(g - xhat*mean(g*xhat)), on R*S lanes.
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<T> dyT = dyQue_.DeQue<T>();
        LocalTensor<T> xT = xQue_.DeQue<T>();
        LocalTensor<float> rstd = rstdQue_.DeQue<float>();
        const uint32_t lanes = n * t_.row_stride;
        const LocalTensor<float> rstdWide = rstdWideBuf_.Get<float>(), meanWide = meanWideBuf_.Get<float>();
        const LocalTensor<float> g = gBuf_.Get<float>(), dgamma = dgammaBuf_.Get<float>();
        const LocalTensor<float> sums = sumBuf_.Get<float>();
        LocalTensor<float> dy, xhat;
        if constexpr (IsFloat()) {
            dy = dyT;
            xhat = xT;
        } else {
            dy = dyF32Buf_.Get<float>();
            xhat = xhatBuf_.Get<float>();
            Widen(dy, dyT, lanes);
            Widen(xhat, xT, lanes);
        }
        Spread(rstdWide, rstd, n);
        Mul(xhat, xhat, rstdWide, lanes);
        Mul(g, dy, gammaBuf_.Get<float>(), lanes);
        Mul(dy, dy, xhat, lanes);
        Add(dgamma, dgamma, dy, lanes);
        Mul(dy, g, xhat, lanes);
        RowSums(sums, dy, n);
        Muls(sums, sums, t_.inv_cols, n);
        Spread(meanWide, sums, n);
        Mul(xhat, xhat, meanWide, lanes);
        Sub(g, g, xhat, lanes);
        LocalTensor<T> dxT = dxQue_.AllocTensor<T>();
        if constexpr (IsFloat()) {
            Mul(dxT, g, rstdWide, lanes);
        } else {
            Mul(g, g, rstdWide, lanes);
            Narrow(dxT, g, lanes);
        }
        dxQue_.EnQue(dxT);
        dyQue_.FreeTensor(dyT);
        xQue_.FreeTensor(xT);
        rstdQue_.FreeTensor(rstd);
    }

    __aicore__ inline void CopyOut(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dxT = dxQue_.DeQue<T>();
        CopyOutRows(dxGm_[row * t_.cols], dxT, n, t_.cols);
        dxQue_.FreeTensor(dxT);
    }

    RmsNormBackwardTilingData t_;
    TPipe *pipe_ = nullptr;
    GM_ADDR dgammaAddr_ = nullptr;
    GM_ADDR workspace_ = nullptr;
    GlobalTensor<T> dyGm_, xGm_, dxGm_, gammaGm_;
    GlobalTensor<float> rstdGm_;
    TQue<QuePosition::VECIN, 2> dyQue_, xQue_, rstdQue_;  // depth 2: the next tile is queued early
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, rstdWideBuf_, meanWideBuf_, gBuf_, dyF32Buf_, xhatBuf_, sumBuf_,
        sumHighBuf_;
};

}  // namespace rms_norm_backward_impl
