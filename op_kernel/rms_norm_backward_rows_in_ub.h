// SPDX-License-Identifier: BSD-3-Clause
// Rows that fit the Unified Buffer (CANN's equivalent: ops-nn rms_norm_grad's split_n): tiles of R whole rows, copied in with one DataCopyPad per tensor
// and double buffered (the next tile's copy-in is issued before this tile's compute), computed in
// fp32, dx rounded and copied out per tile. fp32 rows are computed row by row (MTE2 binds them);
// 16-bit rows a tile at a time (ComputeTile16): each instruction's issue costs about what 1400 fp32
// lanes take, so what needs no per-row scalar is one instruction for the tile, and dgamma sums the
// tile's rows in a tile of partial rows, added together when the group ends.
//
// UB budget: RowsInUb in rms_norm_backward_ub_layout.h, which InitBuffer and the tiling both use (the
// tiling sums it to pick tile_rows); tests/kernel/test_ub_budget.py checks this table against both.
// Each buffer takes its bytes rounded up to 32.  R = tile_rows, S = row_stride, s = sizeof(T), E = has_dres,
// g = gamma_bytes
// where W = R if s < 4 else 1  (rows of an fp32 work buffer: 16-bit rows are computed a tile at a time)
//   | buffer                        | buffers     | bytes each                |
//   | dy, x, dx queues              | 3 * 2       | R * S * s                 |
//   | dres queue                    | 2 * E       | R * S * s                 |
//   | rstd queue                    | 2           | R * 4                     |
//   | gamma                         | 1           | S * g                     |
//   | dgamma, g (fp32)              | 2           | W * S * 4                 |
//   | gamma, a, b widened           | 3 * (s < 4) | W * S * 4                 |
//   | ReduceSum work                | 1           | up(cdiv(S, 64), 8) * 4    |
//   | row sums                      | 1           | W * 32                    |
#pragma once
#include "rms_norm_backward_chunk_math.h"
#include "rms_norm_backward_path_base.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class RmsNormBackwardRowsInUb : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kRowsInUb;
    static constexpr bool kTileAtOnce = !kIsFloat<T>;  // 16-bit rows: ComputeTile16

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        InitBase(args, tiling, pipe, gm_, true);
        const auto layout = rmsnorm_backward::layout::RowsInUb(t_, sizeof(T));
        pipe_->InitBuffer(inQueDy_, kDoubleBuffer, layout.tileBytes);
        pipe_->InitBuffer(inQueX_, kDoubleBuffer, layout.tileBytes);
        pipe_->InitBuffer(inQueRstd_, kDoubleBuffer, layout.rstdBytes);
        pipe_->InitBuffer(outQueDx_, kDoubleBuffer, layout.tileBytes);
        if (layout.dres) {
            pipe_->InitBuffer(inQueDres_, kDoubleBuffer, layout.tileBytes);
        }
        if (layout.gammaBytes > 0) {
            pipe_->InitBuffer(gammaBuf_, layout.gammaBytes);
        }
        pipe_->InitBuffer(dgammaBuf_, layout.workF32Bytes);
        pipe_->InitBuffer(gBuf_, layout.workF32Bytes);
        if constexpr (!kIsFloat<T>) {
            pipe_->InitBuffer(gammaF32Buf_, layout.workF32Bytes);
            pipe_->InitBuffer(dyF32Buf_, layout.workF32Bytes);
            pipe_->InitBuffer(xhatBuf_, layout.workF32Bytes);
        }
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(sumBuf_, layout.sumBytes);
        workLanes_ = (kTileAtOnce ? t_.tile_rows : 1) * t_.row_stride;
    }

    __aicore__ inline void Process()
    {
        LoadGamma();
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            if (hasGamma_) {
                Duplicate(dgamma_, 0.0f, workLanes_);
            }
            // Tiles start at the group's first row, so the partial sums are the same on any core.
            if (group.begin < group.end) {
                CopyIn(group.begin, TileRows(group, group.begin, t_.tile_rows));
            }
            for (uint64_t row = group.begin; row < group.end; row += t_.tile_rows) {
                const uint32_t n = TileRows(group, row, t_.tile_rows);
                const uint64_t next = row + t_.tile_rows;
                WaitFor<HardEvent::MTE2_S>(pipe_);  // this tile's rstd is read by the scalar unit
                if (next < group.end) {
                    CopyIn(next, TileRows(group, next, t_.tile_rows));
                }
                Compute(n);
                CopyOut(row, n);
            }
            if (hasGamma_) {  // dgamma's partial rows
                AddRowsOntoFirst(dgamma_, workLanes_ / t_.row_stride, t_.row_stride);
            }
            CopyOutDgamma(gm_.Partial(t_, groupIdx), dgamma_, t_.cols);
            WaitDgammaLeft();
        }
    }

private:
    __aicore__ inline void LoadGamma()
    {
        dgamma_ = dgammaBuf_.Get<float>();
        g_ = gBuf_.Get<float>();
        if (!hasGamma_) {
            return;
        }
        if constexpr (kIsFloat<T>) {
            gamma_ = gammaBuf_.Get<float>();
            CopyInPad(gamma_, gm_.gamma, t_.cols);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            AddGammaOffset(gamma_, t_.gamma_offset, t_.cols);
        } else {
            LoadGammaTile();
        }
    }

    // 16-bit rows: gamma + gamma_offset in fp32 over each row of a tile.
    __aicore__ inline void LoadGammaTile()
    {
        gamma_ = gammaF32Buf_.Get<float>();
        if (WideGamma<T>()) {
            const LocalTensor<float> gammaF32 = gammaBuf_.Get<float>();
            CopyInPad(gammaF32, gm_.gammaF32, t_.cols);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Muls(gamma_, gammaF32, 1.0f, t_.cols);
        } else {
            const LocalTensor<T> gammaT = gammaBuf_.Get<T>();
            CopyInPad(gammaT, gm_.gamma, t_.cols);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Widen(gamma_, gammaT, t_.cols);
        }
        AddGammaOffset(gamma_, t_.gamma_offset, t_.cols);
        RepeatFirstRow(gamma_, t_.row_stride, workLanes_);
    }

    __aicore__ inline void CopyIn(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dyT = inQueDy_.AllocTensor<T>();
        LocalTensor<T> xT = inQueX_.AllocTensor<T>();
        LocalTensor<float> rstd = inQueRstd_.AllocTensor<float>();
        CopyInRows(dyT, gm_.dy[row * t_.cols], n, t_.cols);
        CopyInRows(xT, gm_.x[row * t_.cols], n, t_.cols);
        CopyInPad(rstd, gm_.rstd[row], n);
        inQueDy_.EnQue(dyT);
        inQueX_.EnQue(xT);
        inQueRstd_.EnQue(rstd);
        if (hasDres_) {
            LocalTensor<T> dresT = inQueDres_.AllocTensor<T>();
            CopyInRows(dresT, gm_.dres[row * t_.cols], n, t_.cols);
            inQueDres_.EnQue(dresT);
        }
    }

    // Per row (gamma: the scale, offset included; 1 without gamma): xhat = x*rstd, g = dy*gamma,
    // dgamma += dy*xhat, dx = rstd*(g - xhat*mean(g*xhat)): fp32 rows one at a time (ComputeRow32),
    // 16-bit rows the tile at once (ComputeTile16).
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<T> dyT = inQueDy_.DeQue<T>();
        LocalTensor<T> xT = inQueX_.DeQue<T>();
        LocalTensor<float> rstd = inQueRstd_.DeQue<float>();
        LocalTensor<T> dxT = outQueDx_.AllocTensor<T>();
        LocalTensor<T> dresT;
        if (hasDres_) {
            dresT = inQueDres_.DeQue<T>();
        }
        if constexpr (kTileAtOnce) {
            ComputeTile16(dyT, xT, dxT, dresT, rstd, n);
        } else {
            for (uint32_t r = 0; r < n; ++r) {
                const uint32_t at = r * t_.row_stride;
                ComputeRow32(dyT[at], xT[at], dxT[at], hasDres_ ? dresT[at] : dresT, rstd.GetValue(r));
            }
        }
        outQueDx_.EnQue(dxT);
        if (hasDres_) {
            inQueDres_.FreeTensor(dresT);
        }
        inQueDy_.FreeTensor(dyT);
        inQueX_.FreeTensor(xT);
        inQueRstd_.FreeTensor(rstd);
    }

    __aicore__ inline void ComputeRow32(const LocalTensor<float> &dy, const LocalTensor<float> &xhat,
                                        const LocalTensor<float> &dx, const LocalTensor<float> &dres, float rstdRow)
    {
        const uint32_t cols = t_.cols;
        Muls(xhat, xhat, rstdRow, cols);
        if (hasGamma_) {
            Mul(g_, dy, gamma_, cols);
            Mul(dy, dy, xhat, cols);
            Add(dgamma_, dgamma_, dy, cols);
            Mul(dy, g_, xhat, cols);
            const float mean = RowSum(dy) * t_.inv_cols;
            Muls(xhat, xhat, mean, cols);
            Sub(g_, g_, xhat, cols);
        } else {  // g = dy: three instructions fewer, and no dgamma
            Mul(g_, dy, xhat, cols);
            const float mean = RowSum(g_) * t_.inv_cols;
            Muls(xhat, xhat, mean, cols);
            Sub(g_, dy, xhat, cols);
        }
        if (hasDres_) {  // dx = rstd*g + dres
            Muls(g_, g_, rstdRow, cols);
            Add(dx, g_, dres, cols);
        } else {
            Muls(dx, g_, rstdRow, cols);
        }
    }

    // 16-bit, a tile of n rows at once: a = rstd*dy and b = x widened for the whole tile, dgamma's
    // partial rows += a*b (= dy*xhat), a *= gamma (rstd*g), g = a*b (g*xhat), each one instruction for
    // the tile; per row rstd, the row sum of g*xhat (ReduceSum, all read by the scalar unit after one
    // wait) and dx's x factor k; dx = a + k*b rounded once (dres widened into b and added first).
    // The padding lanes between rows go through the tile's instructions too; nothing reads what they
    // hold (each row's sum and copy-out take its cols).
    __aicore__ inline void ComputeTile16(const LocalTensor<T> &dyT, const LocalTensor<T> &xT, const LocalTensor<T> &dx,
                                         const LocalTensor<T> &dres, const LocalTensor<float> &rstd, uint32_t n)
    {
        const uint32_t cols = t_.cols, S = t_.row_stride, lanes = n * S;
        const LocalTensor<float> a = dyF32Buf_.Get<float>(), b = xhatBuf_.Get<float>();
        const LocalTensor<float> sums = sumBuf_.Get<float>();
        Widen(a, dyT, lanes);
        Widen(b, xT, lanes);
        for (uint32_t r = 0; r < n; ++r) {
            Muls(a[r * S], a[r * S], rstd.GetValue(r), cols);
        }
        if (hasGamma_) {
            MulAddDst(dgamma_, a, b, lanes);
            Mul(a, a, gamma_, lanes);
        }
        Mul(g_, a, b, lanes);
        for (uint32_t r = 0; r < n; ++r) {
            ReduceSum(sums[r * kFloatsPerBlock], g_[r * S], workBuf_.Get<float>(), cols);
        }
        WaitFor<HardEvent::V_S>(pipe_);
        for (uint32_t r = 0; r < n; ++r) {
            const float rstdRow = rstd.GetValue(r);
            const float k = -(rstdRow * rstdRow * (sums.GetValue(r * kFloatsPerBlock) * t_.inv_cols));
            Axpy(a[r * S], b[r * S], k, cols);
        }
        WaitFor<HardEvent::S_V>(pipe_);  // the next tile's ReduceSums overwrite what the scalar unit read
        if (hasDres_) {
            Widen(b, dres, lanes);
            Add(a, a, b, lanes);
        }
        Narrow(dx, a, lanes);
    }

    __aicore__ inline float RowSum(const LocalTensor<float> &values)
    {
        LocalTensor<float> sum = sumBuf_.Get<float>();
        ReduceSum(sum, values, workBuf_.Get<float>(), t_.cols);
        WaitFor<HardEvent::V_S>(pipe_);
        const float total = sum.GetValue(0);
        WaitFor<HardEvent::S_V>(pipe_);  // the next ReduceSum overwrites what the scalar unit read
        return total;
    }

    __aicore__ inline void CopyOut(uint64_t row, uint32_t n)
    {
        LocalTensor<T> dxT = outQueDx_.DeQue<T>();
        CopyOutRows(gm_.dx[row * t_.cols], dxT, n, t_.cols);
        outQueDx_.FreeTensor(dxT);
    }

    OperatorGm<T> gm_;
    TQue<QuePosition::VECIN, kDoubleBuffer> inQueDy_, inQueX_, inQueRstd_, inQueDres_;  // the next tile is queued early
    TQue<QuePosition::VECOUT, 1> outQueDx_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, gBuf_, gammaF32Buf_, dyF32Buf_, xhatBuf_, workBuf_, sumBuf_;
    LocalTensor<float> gamma_, dgamma_, g_;
    uint32_t workLanes_ = 0;  // an fp32 work buffer's lanes (a tile's rows for 16-bit rows, else one) times S
};

}  // namespace rmsnorm_backward::kernel
