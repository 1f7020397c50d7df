// Small-D (rows of at most 640 columns filling whole 32-byte blocks): tiles of
// (195584 - 10C) / (24C + 268) rows. The element-wise passes cover the whole tile, per-row factors
// (rstd, the mean) broadcast to one 32-byte block per row by Brcb and read with a zero block stride,
// gamma read with a zero repeat stride; the row sums fold each row to one repeat and end in one
// WholeReduceSum over the tile; dgamma is one dependent Add per row. Every pass is followed by a
// vector barrier. The next tile's load is issued once this tile's row sums are done.
//
// UB: anchor_row_tiles.h's buffers, rstd and mean broadcast R*32 each (R rounded up to 8), row sums
// R*4 and, for 16-bit data, dy*gamma in fp32 (R*S*4).
#pragma once
#include "anchor_row_tiles.h"

namespace anchor {

constexpr uint32_t kMaxRepeats = 255;

template <typename T>
class AnchorSmallD : public AnchorRowTiles<T, AnchorSmallD<T>> {
    using Base = AnchorRowTiles<T, AnchorSmallD<T>>;
    using Base::t_, Base::pipe_, Base::gammaF32_, Base::dgamma_;

public:
    __aicore__ inline void InitPath()
    {
        const uint32_t blocks = RoundUp(t_.tileRows, kFloatsPerBlock()) * kBlockBytes;  // Brcb fills 8 per repeat
        pipe_->InitBuffer(rstdBlocksBuf_, blocks);
        pipe_->InitBuffer(meanBlocksBuf_, blocks);
        pipe_->InitBuffer(sumsBuf_, RoundUp(t_.tileRows * sizeof(float), kBlockBytes));
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(gBuf_, t_.tileRows * t_.rowStride * sizeof(float));
        }
        rowBlocks_ = t_.rowStride * sizeof(float) / kBlockBytes;
    }

    __aicore__ inline void ComputeTile(uint64_t row, uint32_t n)
    {
        auto tile = Base::TakeTile(n);
        LocalTensor<float> dy = tile.dy, x = tile.x, g;  // g: dy * gamma, then dx in fp32
        if constexpr (IsFloat<T>()) {
            g = tile.dxT;
        } else {
            g = gBuf_.Get<float>();
        }
        const uint32_t count = n * t_.rowStride;
        LocalTensor<float> rstdBlocks = rstdBlocksBuf_.Get<float>();
        LocalTensor<float> meanBlocks = meanBlocksBuf_.Get<float>();
        LocalTensor<float> sums = sumsBuf_.Get<float>();
        Broadcast(rstdBlocks, tile.rstd, n);
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
        Base::CopyIn(row + t_.tileRows);
        Muls(sums, sums, t_.invCols, n);
        VectorBarrier();
        Broadcast(meanBlocks, sums, n);
        RowsTimes(x, x, meanBlocks, n, true);   // xhat * mean
        Sub(g, g, x, count);
        VectorBarrier();
        // 16-bit: dy is spent and holds dx until the tile is rounded
        RowsTimes(IsFloat<T>() ? g : dy, g, rstdBlocks, n, true);
        Base::FinishTile(tile, dy, row, n);
    }

private:
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

    TBuf<QuePosition::VECCALC> rstdBlocksBuf_, meanBlocksBuf_, sumsBuf_, gBuf_;
    uint32_t rowBlocks_ = 0;
};

}  // namespace anchor
