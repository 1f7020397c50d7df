// SPDX-License-Identifier: BSD-3-Clause
// Small and mid cols (row_stride S up to the tiling's kSmallColsMaxStride): tiles of up to R rows
// packed back to back, so one vector instruction covers many rows, not one; CANN's equivalent is
// ops-nn rms_norm_grad's split_n (whole rows per core), which runs row by row. Per row r:
//   xhat = x*rstd, g = dy*gamma, dgamma += dy*xhat, dx = g*rstd + xhat*c, c = -rstd*mean(g*xhat).
// Why this schedule: the path is HBM-bound, so input slots are freed once widened, dx of tile k
// leaves after tile k+2's inputs, rstd comes for several tiles per copy and a group ends in halving
// tiles (less work behind the last copy-in). How a row's scalars and gamma are laid over the lanes
// (a block read with stride 0, or spread over the row) is SmallColsLayout.perRowLanes in the UB layout;
// the per-row scalings and row sums are PackedRows (rms_norm_backward_packed_rows.h).
// dgamma accumulates lane-wise in an R x S tile, folded to one row in a fixed order per group.
//
// UB budget: SmallCols in rms_norm_backward_ub_layout.h, which InitBuffer and the tiling both use (the
// tiling sums it to pick tile_rows); tests/kernel/test_ub_budget.py checks this table against both.
// Each buffer takes its bytes rounded up to 32.  R = tile_rows, S = row_stride, s = sizeof(T), E = has_dres,
// GS = gamma_slots
// where L = 8 if 24 <= S <= 64 or S >= 128 else S  (lanes of a row's scalar: a block, or the row)
// where W = GS * S if GS else (64 if 64 % S == 0 else (S if L == 8 else R * S))  (lanes of widened gamma)
//   | buffer                        | buffers     | bytes each                |
//   | dy, x, dx queues              | 3 * 2       | R * S * s                 |
//   | dres queue                    | 2 * E       | R * S * s                 |
//   | rstd queue (4 tiles' rows)    | 2           | 4 * R * 4                 |
//   | a, xhat, g, dgamma (fp32)     | 4           | R * S * 4                 |
//   | rstd, c per row               | 2           | R * L * 4                 |
//   | gamma widened                 | 1           | W * 4                     |
//   | row-sum factors, rstd batch   | 1           | 4 * R * 4                 |
//   | row sum halves                | 2           | R * 4                     |
#pragma once
#include "rms_norm_backward_packed_rows.h"
#include "rms_norm_backward_path_base.h"
#include "rms_norm_backward_rstd.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class RmsNormBackwardSmallCols : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kSmallCols;

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        InitBase(args, tiling, pipe, gm_, true);
        const auto layout = rmsnorm_backward::layout::SmallCols(t_);
        gammaLanes_ = uint32_t(layout.gammaLanes);
        pipe_->InitBuffer(inQueDy_, kDoubleBuffer, layout.lanes * sizeof(T));
        pipe_->InitBuffer(inQueX_, kDoubleBuffer, layout.lanes * sizeof(T));
        rstd_.Init(pipe_, gm_.rstd, uint32_t(layout.rstdBatchRows));
        pipe_->InitBuffer(outQueDx_, kDoubleBuffer, layout.lanes * sizeof(T));
        if (layout.dres) {
            pipe_->InitBuffer(inQueDres_, kDoubleBuffer, layout.lanes * sizeof(T));
        }
        pipe_->InitBuffer(aBuf_, layout.lanes * sizeof(float));
        pipe_->InitBuffer(xhatBuf_, layout.lanes * sizeof(float));
        pipe_->InitBuffer(gBuf_, layout.lanes * sizeof(float));
        pipe_->InitBuffer(dgammaBuf_, layout.lanes * sizeof(float));
        pipe_->InitBuffer(rstdRowBuf_, layout.rows * layout.perRowLanes * sizeof(float));
        pipe_->InitBuffer(cRowBuf_, layout.rows * layout.perRowLanes * sizeof(float));
        pipe_->InitBuffer(gammaBuf_, layout.gammaLanes * sizeof(float));
        pipe_->InitBuffer(rkBuf_, layout.rstdBatchRows * sizeof(float));
        pipe_->InitBuffer(sumBuf_, layout.rows * sizeof(float));
        packed_.Init(pipe_, t_.row_stride, layout.rowBlocks, uint32_t(layout.rows));
    }

    __aicore__ inline void Process()
    {
        const LocalTensor<float> dgamma = dgammaBuf_.Get<float>();
        bool gammaLoaded = false;
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            const uint32_t foldRows = FoldRows(NextTile(group.end - group.begin));
            if (hasGamma_) {
                Duplicate(dgamma, 0.0f, foldRows * t_.row_stride);
            }
            rstd_.Start(group);
            if (!gammaLoaded && hasGamma_) {  // first: its widening overlaps the first tile's copies
                LoadGamma();
                gammaLoaded = true;
            }
            uint64_t row = group.begin;
            uint32_t n = NextTile(group.end - row);
            if (n > 0) {
                CopyIn(row, n);
            }
            // Tile k's dx leaves after tile k+2's inputs are queued: the inputs, placed first, get HBM
            // first (the vector unit never waits behind a copy-out), and the copy-out fills the HBM
            // time the next input copy spends on its set-up.
            uint64_t outRow = 0;
            uint32_t outN = 0;
            while (n > 0) {
                const uint64_t next = row + n;
                const uint32_t nextN = NextTile(group.end - next);
                if (nextN > 0) {
                    CopyIn(next, nextN);
                }
                if (outN > 0) {
                    CopyOut(outRow, outN);
                }
                Compute(row, n);
                outRow = row;
                outN = n;
                row = next;
                n = nextN;
            }
            if (outN > 0) {
                CopyOut(outRow, outN);
            }
            rstd_.Finish();
            if (hasGamma_) {
                AddRowsOntoFirst(dgamma, foldRows, t_.row_stride);  // the accumulator's fold
            }
            CopyOutDgamma(gm_.Partial(t_, groupIdx), dgamma, t_.cols);
            WaitDgammaLeft();
        }
    }

private:
    // Rows of the next tile when `left` rows of the group remain: whole tiles while more than two are
    // left, then halves (multiples of 8) down to 2R/3. Smaller last tiles leave less work behind the
    // last copy-in, but below about R/2 rows the vector unit's fixed cost per tile exceeds what the
    // tile's copies take, and it would fall behind. Depends on the group only, so every block dim
    // accumulates each row into the same lanes of dgamma.
    __aicore__ inline uint32_t NextTile(uint64_t left) const
    {
        const uint32_t R = t_.tile_rows;
        if (left > 2 * uint64_t(R)) {
            return R;
        }
        if (left <= R * 2 / 3) {
            return uint32_t(left);
        }
        const uint32_t half = RoundUp(CeilDiv(uint32_t(left), 2), kFloatsPerBlock);  // at most R
        return half < left ? half : uint32_t(left);  // R = 8 rounds half of 6 or 7 rows up past them
    }

    // The accumulator rows a group's fold starts from: the last size of the fold from R (R, then
    // ceil(R/2), ...) that still covers the group's largest tile, its first. The steps before it would
    // add only zero rows (x + 0 is x, and the accumulator is never -0), so every group sums in the
    // order of the fold from R, with fewer rows zeroed and folded where the group has fewer rows.
    __aicore__ inline uint32_t FoldRows(uint32_t firstTile) const
    {
        uint32_t rows = t_.tile_rows;
        while (rows > 1 && rows - rows / 2 >= firstTile) {
            rows -= rows / 2;
        }
        return rows;
    }

    // Rows land S elements apart with their padding lanes zeroed, so whole-row sums see only zeros there.
    __aicore__ inline void CopyInPacked(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t rows)
    {
        const uint8_t pad = uint8_t(t_.row_stride - t_.cols);
        DataCopyPad(dst, src, DataCopyExtParams(rows, t_.cols * sizeof(T), 0, 0, 0),
                    DataCopyPadExtParams<T>(true, 0, pad, T(0)));
    }

    // gamma + gamma_offset, widened, repeated over gammaLanes_ (its pattern of whole rows).
    __aicore__ inline void LoadGamma()
    {
        const LocalTensor<float> gamma = gammaBuf_.Get<float>();
        if constexpr (kIsFloat<T>) {
            CopyInPacked(gamma, gm_.gamma, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else if (WideGamma<T>()) {  // a float32 row pads only to 8 lanes: the 16-bit row's are zeroed first
            Duplicate(gamma, 0.0f, t_.row_stride);
            WaitFor<HardEvent::V_MTE2>(pipe_);
            const uint32_t padded = RoundUp(t_.cols, kFloatsPerBlock);
            DataCopyPad(gamma, gm_.gammaF32, DataCopyExtParams(1, t_.cols * sizeof(float), 0, 0, 0),
                        DataCopyPadExtParams<float>(true, 0, uint8_t(padded - t_.cols), 0.0f));
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            const LocalTensor<T> gammaT = aBuf_.Get<T>();
            CopyInPacked(gammaT, gm_.gamma, 1);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Widen(gamma, gammaT, t_.row_stride);
        }
        AddGammaOffset(gamma, t_.gamma_offset, t_.cols);  // the pad lanes stay 0
        RepeatFirstRow(gamma, t_.row_stride, gammaLanes_);
    }

    // dy and x of the tile, and rstd of the next kSmallColsRstdBatchTiles tiles' rows when the tile
    // reaches past the last batch (one copy set-up for many tiles).
    __aicore__ inline void CopyIn(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = inQueDy_.AllocTensor<T>();
        LocalTensor<T> xT = inQueX_.AllocTensor<T>();
        CopyInPacked(dyT, gm_.dy[row * t_.cols], n);
        CopyInPacked(xT, gm_.x[row * t_.cols], n);
        inQueDy_.EnQue(dyT);
        inQueX_.EnQue(xT);
        if (hasDres_) {
            LocalTensor<T> dresT = inQueDres_.AllocTensor<T>();
            CopyInPacked(dresT, gm_.dres[row * t_.cols], n);
            inQueDres_.EnQue(dresT);
        }
        rstd_.CopyInFor(row, n);
    }

    // g = dy * gamma over n rows: the gamma pattern read again with repeat stride 0 where it is short.
    __aicore__ inline void MulGamma(const LocalTensor<float> &g, const LocalTensor<float> &dy, uint32_t n)
    {
        const LocalTensor<float> gamma = gammaBuf_.Get<float>();
        const uint32_t lanes = n * t_.row_stride;
        if (gammaLanes_ == t_.tile_rows * t_.row_stride) {
            Mul(g, dy, gamma, int32_t(lanes));
        } else if (gammaLanes_ == kFloatsPerRepeat) {
            Mul(g, dy, gamma, kFloatsPerRepeat, CeilDiv(lanes, kFloatsPerRepeat), Src1RepeatedPerRepeat());
        } else {  // one instruction per 64-lane column chunk of the rows
            const uint8_t blocksPerRow = uint8_t(t_.row_stride / kFloatsPerBlock);
            const BinaryRepeatParams params(1, 1, 1, blocksPerRow, blocksPerRow, 0);
            for (uint32_t h = 0; h < t_.row_stride; h += kFloatsPerRepeat) {
                Mul(g[h], dy[h], gamma[h], packed_.ChunkLanes(h), n, params);
            }
        }
    }

    // The math of the header's "per row r" (without gamma g is dy itself, and there is no dgamma).
    __aicore__ inline void Compute(uint64_t row, uint32_t n)
    {
        if constexpr (kIsFloat<T>) {
            Compute32(row, n);
        } else {
            Compute16(row, n);
        }
    }
    __aicore__ inline void Compute32(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = inQueDy_.DeQue<T>();
        LocalTensor<T> xT = inQueX_.DeQue<T>();
        const uint32_t lanes = n * t_.row_stride;
        const LocalTensor<float> a = aBuf_.Get<float>(), xhat = xhatBuf_.Get<float>(), g = gBuf_.Get<float>();
        const LocalTensor<float> sums = sumBuf_.Get<float>();
        const LocalTensor<float> rstdRow = rstdRowBuf_.Get<float>(), cRow = cRowBuf_.Get<float>();
        const LocalTensor<float> dy = dyT, x = xT;
        const LocalTensor<float> rstd = rstd_.Of(row);
        const LocalTensor<float> rk = RowFactors<false>(row);
        packed_.PerRow(rstdRow, rstd, n);
        packed_.MulRows<false>(xhat, x, rstdRow, n);
        inQueX_.FreeTensor(xT);
        if (hasGamma_) {
            MulAddDst(dgammaBuf_.Get<float>(), dy, xhat, int32_t(lanes));
            MulGamma(g, dy, n);
            inQueDy_.FreeTensor(dyT);
        }
        const LocalTensor<float> scaled = hasGamma_ ? g : dy;  // dy*gamma
        Mul(a, scaled, xhat, int32_t(lanes));
        LocalTensor<T> dxT = outQueDx_.AllocTensor<T>();
        packed_.RowSums(sums, a, n, dxT.template ReinterpretCast<float>());
        Mul(sums, sums, rk, int32_t(n));
        packed_.PerRow(cRow, sums, n);
        packed_.MulRows<false>(dxT, xhat, cRow, n);
        packed_.MulRows<true>(dxT, scaled, rstdRow, n);
        if (hasDres_) {
            LocalTensor<T> dresT = inQueDres_.DeQue<T>();
            Add(dxT, dxT, dresT, int32_t(lanes));
            inQueDres_.FreeTensor(dresT);
        }
        if (!hasGamma_) {  // dy's slot held g
            inQueDy_.FreeTensor(dyT);
        }
        outQueDx_.EnQue(dxT);
    }

    // 16-bit rows, widened at once (the input slots take the next tile's copy early) into a = dy, b = x:
    // a = rstd*dy per row, dgamma += a*b (= dy*xhat), a *= gamma (rstd*g), k = -rstd^2*mean(a*b) per
    // row, dx = a + k*b. Two per-row scalings (each an instruction per 64-lane chunk of a row), not three.
    __aicore__ inline void Compute16(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = inQueDy_.DeQue<T>();
        LocalTensor<T> xT = inQueX_.DeQue<T>();
        const uint32_t lanes = n * t_.row_stride;
        const LocalTensor<float> a = aBuf_.Get<float>(), b = xhatBuf_.Get<float>(), ab = gBuf_.Get<float>();
        const LocalTensor<float> sums = sumBuf_.Get<float>();
        const LocalTensor<float> rstdRow = rstdRowBuf_.Get<float>(), kRow = cRowBuf_.Get<float>();
        Widen(a, dyT, lanes);
        Widen(b, xT, lanes);
        inQueDy_.FreeTensor(dyT);
        inQueX_.FreeTensor(xT);
        const LocalTensor<float> rstd = rstd_.Of(row);
        const LocalTensor<float> rk = RowFactors<true>(row);
        packed_.PerRow(rstdRow, rstd, n);
        packed_.MulRows<false>(a, a, rstdRow, n);
        if (hasGamma_) {
            MulAddDst(dgammaBuf_.Get<float>(), a, b, int32_t(lanes));
            MulGamma(a, a, n);
        }
        Mul(ab, a, b, int32_t(lanes));
        LocalTensor<T> dxT = outQueDx_.AllocTensor<T>();
        packed_.RowSums(sums, ab, n, dxT.template ReinterpretCast<float>());
        Mul(sums, sums, rk, int32_t(n));
        packed_.PerRow(kRow, sums, n);
        packed_.MulRows<true>(a, b, kRow, n);
        if (hasDres_) {  // added in fp32, widened into b (read for the last time above)
            LocalTensor<T> dresT = inQueDres_.DeQue<T>();
            Widen(b, dresT, lanes);
            Add(a, a, b, int32_t(lanes));
            inQueDres_.FreeTensor(dresT);
        }
        Narrow(dxT, a, lanes);
        outQueDx_.EnQue(dxT);
    }

    // The tile's factors of the row sums: -rstd/cols (squared: -rstd^2/cols), computed for a whole
    // rstd batch when the tile at `row` takes a new one (two instructions per batch, not per tile).
    template <bool squared>
    __aicore__ inline LocalTensor<float> RowFactors(uint64_t row)
    {
        const LocalTensor<float> rk = rkBuf_.Get<float>();
        if (rstd_.Fresh()) {
            const LocalTensor<float> batch = rstd_.Batch();
            Muls(rk, batch, -t_.inv_cols, int32_t(rstd_.BatchCount()));
            if constexpr (squared) {
                Mul(rk, rk, batch, int32_t(rstd_.BatchCount()));
            }
        }
        return rk[rstd_.IndexOf(row)];
    }

    __aicore__ inline void CopyOut(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dxT = outQueDx_.DeQue<T>();
        CopyOutRows(gm_.dx[row * t_.cols], dxT, n, t_.cols);
        outQueDx_.FreeTensor(dxT);
    }

    OperatorGm<T> gm_;
    uint32_t gammaLanes_ = 0;
    RstdTileBatches rstd_;
    TQue<QuePosition::VECIN, kDoubleBuffer> inQueDy_, inQueX_, inQueDres_;  // the next tile is queued early
    TQue<QuePosition::VECOUT, 1> outQueDx_;
    TBuf<QuePosition::VECCALC> aBuf_, xhatBuf_, gBuf_, dgammaBuf_, rstdRowBuf_, cRowBuf_, gammaBuf_, rkBuf_, sumBuf_;
    PackedRows packed_;  // the tile's lanes: per-row scalings and row sums
};

}  // namespace rmsnorm_backward::kernel
