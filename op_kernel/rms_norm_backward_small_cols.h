// Small cols (row_stride <= 128): tiles of R rows packed back to back (each row zero-padded to S =
// row_stride elements), so every vector instruction covers R*S lanes of many rows instead of one short
// row. Per-row scalars (rstd, the row mean) are spread over their row's lanes with Brcb; row sums
// come from WholeReduceSum, one repeat per row. dgamma accumulates lane-wise in an R x S tile and is
// folded to one row, in a fixed pairwise order, at the end of each group.
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
        gm_.Init(dy, x, rstd, gamma, dx, dgamma, workspace, t_);
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
                CopyIn(group.begin, TileRows(group, group.begin, t_.tile_rows));
            }
            for (uint64_t row = group.begin; row < group.end; row += t_.tile_rows) {
                const uint64_t next = row + t_.tile_rows;
                if (next < group.end) {
                    CopyIn(next, TileRows(group, next, t_.tile_rows));
                }
                Compute(TileRows(group, row, t_.tile_rows));
                CopyOut(row, TileRows(group, row, t_.tile_rows));
            }
            // Fold the tile's rows pairwise, the upper rows onto the lower ones, in log2(R) steps:
            // a fixed order, so the same sum on every core and every run.
            for (uint32_t rows = t_.tile_rows; rows > 1;) {
                const uint32_t half = rows / 2;
                Add(dgamma, dgamma, dgamma[(rows - half) * t_.row_stride], half * t_.row_stride);
                rows -= half;
            }
            WaitFor<HardEvent::V_MTE3>(pipe_);
            CopyOutPad(gm_.Partial(t_, g), dgamma, t_.cols);
            WaitFor<HardEvent::MTE3_V>(pipe_);
        }
    }

private:
    static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

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
            CopyInPacked(row, gm_.gamma, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            const LocalTensor<T> gammaT = meanWideBuf_.Get<T>();
            CopyInPacked(gammaT, gm_.gamma, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Widen(row, gammaT, t_.row_stride);
        }
        Muls(gammaWide, row, 1.0f, t_.row_stride);
        for (uint32_t rows = 1; rows < t_.tile_rows; rows *= 2) {  // doubling copies
            const uint32_t copy = rows < t_.tile_rows - rows ? rows : t_.tile_rows - rows;
            Muls(gammaWide[rows * t_.row_stride], gammaWide, 1.0f, copy * t_.row_stride);
        }
    }

    __aicore__ inline void CopyIn(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = dyQue_.AllocTensor<T>();
        LocalTensor<T> xT = xQue_.AllocTensor<T>();
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        CopyInPacked(dyT, gm_.dy[row * t_.cols], n);
        CopyInPacked(xT, gm_.x[row * t_.cols], n);
        CopyInPad(rstd, gm_.rstd[row], n);
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
        CopyOutRows(gm_.dx[row * t_.cols], dxT, n, t_.cols);
        dxQue_.FreeTensor(dxT);
    }

    RmsNormBackwardTilingData t_;
    TPipe *pipe_ = nullptr;
    OperatorGm<T> gm_;
    TQue<QuePosition::VECIN, 2> dyQue_, xQue_, rstdQue_;  // depth 2: the next tile is queued early
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, rstdWideBuf_, meanWideBuf_, gBuf_, dyF32Buf_, xhatBuf_, sumBuf_,
        sumHighBuf_;
};

}  // namespace rms_norm_backward_impl
