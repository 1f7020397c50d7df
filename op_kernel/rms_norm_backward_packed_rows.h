// SPDX-License-Identifier: BSD-3-Clause
// The lane arithmetic of a tile of packed rows (rms_norm_backward_small_cols.h): rows of S lanes back
// to back, so one vector instruction covers many rows. Per-row scalars are laid over the lanes
// (PerRow), multiplied into the rows (MulRows), and the rows summed one value each (RowSums), each in
// as few instructions as the row's width allows. Rows of 24 to 64 lanes, or of 128 or more, take a
// per-row scalar as one block (scalarAsBlock, the layout's rowBlocks: read with block stride 0); other
// rows have it spread over their S lanes. SmallColsLayout.perRowLanes sizes the buffers either way.
//
// UB budget: the "row sum halves" row's second buffer of the path's table (R * 4 bytes).
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class PackedRows {
public:
    // Rows of rowStride lanes; up to `rows` of them a tile.
    __aicore__ inline void Init(TPipe *pipe, uint32_t rowStride, bool scalarAsBlock, uint32_t rows)
    {
        S_ = rowStride;
        scalarAsBlock_ = scalarAsBlock;
        pipe->InitBuffer(sumHighBuf_, rows * sizeof(float));
    }

    // Lanes of the 64-lane column chunk at h (the last one of a row may be shorter).
    __aicore__ inline uint64_t ChunkLanes(uint32_t h) const
    {
        return S_ - h < kFloatsPerRepeat ? S_ - h : kFloatsPerRepeat;
    }

    // values[r] for the rows of a tile, laid out for MulRows: one block per row (scalarAsBlock), else
    // spread over the S lanes of the row (S/8 Brcb calls, one block column each).
    __aicore__ inline void PerRow(const LocalTensor<float> &dst, const LocalTensor<float> &values, uint32_t n)
    {
        const uint8_t repeats = uint8_t(CeilDiv(n, kFloatsPerBlock));
        if (scalarAsBlock_) {
            Brcb(dst, values, repeats, BrcbRepeatParams{1, kBlocksPerRepeat});
            return;
        }
        const uint32_t blocksPerRow = S_ / kFloatsPerBlock;
        for (uint32_t b = 0; b < blocksPerRow; ++b) {
            Brcb(dst[b * kFloatsPerBlock], values, repeats,
                 BrcbRepeatParams{uint16_t(blocksPerRow), uint16_t(blocksPerRow * kFloatsPerBlock)});
        }
    }

    // dst = src * perRow (accumulate: dst += src * perRow) over n rows.
    template <bool accumulate>
    __aicore__ inline void MulRows(const LocalTensor<float> &dst, const LocalTensor<float> &src,
                                   const LocalTensor<float> &perRow, uint32_t n)
    {
        if (!scalarAsBlock_) {
            if constexpr (accumulate) {
                MulAddDst(dst, src, perRow, int32_t(n * S_));
            } else {
                Mul(dst, src, perRow, int32_t(n * S_));
            }
            return;
        }
        const uint8_t blocksPerRow = uint8_t(S_ / kFloatsPerBlock);
        const BinaryRepeatParams params(1, 1, 0, blocksPerRow, blocksPerRow, 1);  // block stride 0: one block per row
        for (uint32_t h = 0; h < S_; h += kFloatsPerRepeat) {
            const uint64_t mask = ChunkLanes(h);
            if constexpr (accumulate) {
                MulAddDst(dst[h], src[h], perRow, mask, n, params);
            } else {
                Mul(dst[h], src[h], perRow, mask, n, params);
            }
        }
    }

    // sums[r] = sum of row r's S lanes: one WholeReduceSum repeat per row (two for rows of 72..128).
    // Rows of whole blocks of repeats (S a multiple of 512: a row's S/64 repeat sums fill whole blocks)
    // sum each repeat into `partials` (one instruction for the tile) and those per row (a second);
    // other wider rows fold their column chunks onto the first, the upper half onto the lower in a
    // fixed pairwise order (values is overwritten), then one repeat per row sums the 64 lanes left.
    // Both orders are fixed, so every run sums alike.
    __aicore__ inline void RowSums(const LocalTensor<float> &sums, const LocalTensor<float> &values, uint32_t n,
                                   const LocalTensor<float> &partials)
    {
        const int32_t blocksPerRow = int32_t(S_ / kFloatsPerBlock);
        const uint32_t perRow = S_ / kFloatsPerRepeat;
        if (S_ % (kFloatsPerRepeat * kFloatsPerBlock) == 0 && n * perRow <= kMaxRepeats) {
            WholeReduceSum(partials, values, int32_t(kFloatsPerRepeat), int32_t(n * perRow), 1, 1,
                           kBlocksPerRepeat);
            WholeReduceSum(sums, partials, int32_t(perRow), int32_t(n), 1, 1, int32_t(perRow / kFloatsPerBlock));
            return;
        }
        if (S_ > 2 * kFloatsPerRepeat) {
            const uint8_t stride = uint8_t(blocksPerRow);
            const BinaryRepeatParams params(1, 1, 1, stride, stride, stride);
            for (uint32_t chunks = CeilDiv(S_, kFloatsPerRepeat); chunks > 1;) {
                const uint32_t half = chunks / 2;
                for (uint32_t j = 0; j < half; ++j) {
                    const uint32_t h = (chunks - half + j) * kFloatsPerRepeat;
                    const LocalTensor<float> lower = values[j * kFloatsPerRepeat];
                    Add(lower, lower, values[h], ChunkLanes(h), n, params);
                }
                chunks -= half;
            }
            WholeReduceSum(sums, values, int32_t(kFloatsPerRepeat), int32_t(n), 1, 1, blocksPerRow);
            return;
        }
        const int32_t low = int32_t(S_ < kFloatsPerRepeat ? S_ : kFloatsPerRepeat);
        WholeReduceSum(sums, values, low, int32_t(n), 1, 1, blocksPerRow);
        if (S_ > kFloatsPerRepeat) {
            const LocalTensor<float> high = sumHighBuf_.Get<float>();
            WholeReduceSum(high, values[kFloatsPerRepeat], int32_t(S_ - kFloatsPerRepeat), int32_t(n), 1, 1,
                           blocksPerRow);
            Add(sums, sums, high, n);
        }
    }

private:
    uint32_t S_ = 0;              // lanes of a row (the tiling's row_stride)
    bool scalarAsBlock_ = false;  // per-row scalars as one block per row (the layout's rowBlocks)
    TBuf<QuePosition::VECCALC> sumHighBuf_;  // RowSums: the upper 64 lanes' sums of rows of 72..128 lanes
};

}  // namespace rmsnorm_backward::kernel
