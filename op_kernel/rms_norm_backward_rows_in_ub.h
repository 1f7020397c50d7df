// SPDX-License-Identifier: BSD-3-Clause
// Rows that fit the Unified Buffer (CANN's equivalent: ops-nn rms_norm_grad's split_n): tiles of R whole rows, copied in with one DataCopyPad per tensor
// and double buffered (the next tile's copy-in is issued before this tile's compute), computed row by
// row in fp32, dx rounded and copied out per tile.
//
// UB budget: RowsInUb in rms_norm_backward_ub_layout.h, which InitBuffer and the tiling both use (the
// tiling sums it to pick tile_rows); tests/kernel/test_ub_budget.py checks this table against both.
// Each buffer takes its bytes rounded up to 32.  R = tile_rows, S = row_stride, s = sizeof(T), E = has_dres,
// g = gamma_bytes
//   | buffer                        | buffers     | bytes each                |
//   | dy, x, dx queues              | 3 * 2       | R * S * s                 |
//   | dres queue                    | 2 * E       | R * S * s                 |
//   | rstd queue                    | 2           | R * 4                     |
//   | gamma                         | 1           | S * g                     |
//   | dgamma, g (fp32 rows)         | 2           | S * 4                     |
//   | gamma, dy, xhat widened       | 3 * (s < 4) | S * 4                     |
//   | ReduceSum work                | 1           | up(cdiv(S, 64), 8) * 4    |
//   | row sum                       | 1           | 32                        |
#pragma once
#include "rms_norm_backward_chunk_math.h"
#include "rms_norm_backward_path_base.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class RmsNormBackwardRowsInUb : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kRowsInUb;

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
        pipe_->InitBuffer(dgammaBuf_, layout.rowF32Bytes);
        pipe_->InitBuffer(gBuf_, layout.rowF32Bytes);
        if constexpr (!kIsFloat<T>) {
            pipe_->InitBuffer(gammaF32Buf_, layout.rowF32Bytes);
            pipe_->InitBuffer(dyF32Buf_, layout.rowF32Bytes);
            pipe_->InitBuffer(xhatBuf_, layout.rowF32Bytes);
        }
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(sumBuf_, kBlockBytes);
    }

    __aicore__ inline void Process()
    {
        LoadGamma();
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            if (hasGamma_) {
                Duplicate(dgamma_, 0.0f, t_.cols);
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
        if (WideGamma<T>()) {
            gamma_ = gammaBuf_.Get<float>();
            CopyInPad(gamma_, gm_.gammaF32, t_.cols);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            LocalTensor<T> gammaT = gammaBuf_.Get<T>();
            CopyInPad(gammaT, gm_.gamma, t_.cols);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            if constexpr (kIsFloat<T>) {
                gamma_ = gammaT;
            } else {
                gamma_ = gammaF32Buf_.Get<float>();
                Widen(gamma_, gammaT, t_.cols);
            }
        }
        AddGammaOffset(gamma_, t_.gamma_offset, t_.cols);
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
    // dgamma += dy*xhat, dx = rstd*(g - xhat*mean(g*xhat)); 16-bit rows: Compute16.
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
        for (uint32_t r = 0; r < n; ++r) {
            const uint32_t at = r * t_.row_stride;
            if constexpr (kIsFloat<T>) {
                ComputeRow32(dyT[at], xT[at], dxT[at], hasDres_ ? dresT[at] : dresT, rstd.GetValue(r));
            } else {
                ComputeRow16(dyT[at], xT[at], dxT[at], hasDres_ ? dresT[at] : dresT, rstd.GetValue(r));
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

    // 16-bit: a = rstd*dy and b = x widened stay in fp32: dgamma += a*b (= dy*xhat), a *= gamma (rstd*g),
    // dx = a - rstd^2*mean(a*b)*b, rounded once (dres widened into b and added first): 8 instructions
    // and the row's ReduceSum, where scaling x by rstd first takes 11.
    __aicore__ inline void ComputeRow16(const LocalTensor<T> &dyT, const LocalTensor<T> &xT, const LocalTensor<T> &dx,
                                        const LocalTensor<T> &dres, float rstdRow)
    {
        const uint32_t cols = t_.cols;
        const LocalTensor<float> a = dyF32Buf_.Get<float>(), b = xhatBuf_.Get<float>();
        WidenScaled(a, b, dgamma_, gamma_, dyT, xT, rstdRow, hasGamma_, cols);
        Mul(g_, a, b, cols);
        const float k = -(rstdRow * rstdRow * (RowSum(g_) * t_.inv_cols));
        Axpy(a, b, k, cols);
        if (hasDres_) {
            Widen(b, dres, cols);
            Add(a, a, b, cols);
        }
        Narrow(dx, a, cols);
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
};

}  // namespace rmsnorm_backward::kernel
