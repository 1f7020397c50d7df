// Split-N (cols <= 6080 outside small-D): a core's rows go through UB one row at a time (tileRows
// is 1), each computed on its own: rstd read by the scalar unit, about twelve fp32-width passes
// each behind a vector barrier, a halving-tree row sum the scalar unit waits for, and one dependent
// Add into dgamma. The next row's load is issued only once this row's sum is known.
//
// UB: anchor_row_tiles.h's buffers, a 32-byte row sum and, for 16-bit data, one fp32 row of dy*gamma.
#pragma once
#include "anchor_row_tiles.h"

namespace anchor {

template <typename T>
class AnchorSplitN : public AnchorRowTiles<T, AnchorSplitN<T>> {
    using Base = AnchorRowTiles<T, AnchorSplitN<T>>;
    using Base::t_, Base::pipe_, Base::gammaF32_, Base::dgamma_;

public:
    __aicore__ inline void InitPath()
    {
        pipe_->InitBuffer(sumBuf_, kBlockBytes);
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(gBuf_, t_.rowStride * sizeof(float));
        }
    }

    __aicore__ inline void ComputeTile(uint64_t row, uint32_t n)
    {
        auto tile = Base::TakeTile(n);
        WaitFor<HardEvent::MTE2_S>(pipe_);  // rstd is read by the scalar unit
        const uint32_t S = t_.rowStride;
        for (uint32_t r = 0; r < n; ++r) {
            LocalTensor<float> dy = tile.dy[r * S], x = tile.x[r * S];
            LocalTensor<float> g;  // dy * gamma, then this row of dx in fp32
            if constexpr (IsFloat<T>()) {
                g = tile.dxT[r * S];
            } else {
                g = gBuf_.Get<float>();
            }
            const float rstdRow = tile.rstd.GetValue(r);
            const float mean = RowTerms(dy, x, g, rstdRow) * t_.invCols;
            if (r == 0) {
                Base::CopyIn(row + t_.tileRows);
            }
            Muls(x, x, mean, t_.cols);
            VectorBarrier();
            Sub(g, g, x, t_.cols);
            VectorBarrier();
            // 16-bit: dy's row is spent and holds dx until the tile is rounded
            Muls(IsFloat<T>() ? g : dy, g, rstdRow, t_.cols);
            VectorBarrier();
        }
        Base::FinishTile(tile, tile.dy, row, n);
    }

private:
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

    TBuf<QuePosition::VECCALC> sumBuf_, gBuf_;
};

}  // namespace anchor
