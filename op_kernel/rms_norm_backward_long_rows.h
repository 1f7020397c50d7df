// SPDX-License-Identifier: BSD-3-Clause
// Long rows (CANN's equivalent: ops-nn rms_norm_grad's split_d, a row split in chunks of cols): one
// row at a time. The row's dy and x stay in UB in their dtype and are widened to fp32 in chunks of
// C cols, twice (16-bit rows keep chunk 0 widened from pass 1 to pass 2): pass 1 sums g*xhat for
// the row mean and adds dy*xhat into dgamma, pass 2 writes dx. So each byte of dy and x is read
// from GM once. The next rows stream in meanwhile (rms_norm_backward_long_rows_store.h): into spare
// row buffers when two or three rows fit, else into rings of chunk slots, each slot refilled as
// soon as pass 2 is done with it (dy's: once the dx written over it has left). fp32 rows too long
// to keep whole beside gamma and a whole fp32 dgamma keep dgamma in the group's GM partial instead
// (dgamma_ub_cols = 0: pass 2 adds into it chunk by chunk, rms_norm_backward_dgamma_partial.h), and
// so do some 16-bit rows in a ring (pass 1 adds into it): bf16 rows to hold gamma in fp32 in its
// place, fp16 rows past 12288 cols to hold the row at all. fp32 rows too long to keep whole beside
// gamma too (about 13300 to 17400 cols) take gamma chunk by chunk as well. These rings run pass 2
// of a row side by side with pass 1 of the next (ComputeRowsSideBySide). Rows too long to keep
// whole take the streamed path instead (rms_norm_backward_long_rows_streamed.h).
//
// UB budget: LongRows in rms_norm_backward_ub_layout.h, which InitBuffer and the tiling both use (the
// tiling sums it to pick the store); tests/kernel/test_ub_budget.py checks this table against both.
// Each buffer takes its bytes rounded up to 32.  N = cols, S = row_stride, s = sizeof(T),
// C = chunk_cols, B = row_buffers, D = dx_over_dy, P = spare_slots, SC = sum_cols, E = has_dres,
// g = gamma_bytes, DR = dgamma_ub_cols, DT = dtype (2: bf16), GS = gamma_slots
// where ring = B == 1  (a ring of chunk slots per tensor instead of row buffers)
// where F = g != 0 and s < 4 and (C >= 4096 or (B > 1 and C >= S) or (DR < N and DT == 2))  (16-bit gamma widened once)
//   | buffer                        | buffers                    | bytes each             |
//   | dy, x row buffers             | 2 * B * (not ring)         | S * s                  |
//   | dy, x ring slots              | 2 * (cdiv(N, C) + P) * ring | C * s                 |
//   | gamma whole                   | GS == 0                    | S * (4 if F else g)    |
//   | gamma chunk slots             | GS                         | C * g                  |
//   | dgamma (fp32)                 | (g != 0) * (DR == N)       | S * 4                  |
//   | dgamma partial out            | 2 * (DR < N)               | C * 4                  |
//   | a, b (fp32 chunks)            | 2                          | C * 4                  |
//   | row sum                       | 1                          | (SC or 20) * 4         |
//   | dx queue                      | 2 * (D == 0)               | C * s                  |
//   | dres queue                    | 2 * E                      | C * s                  |
//   | rstd batches                  | 2                          | 64 * 4                 |
//   | ReduceSum work                | 1                          | up(cdiv(SC or C, 64), 8) * 4 |
//   | row total                     | 1                          | 32                     |
#pragma once
#include "rms_norm_backward_chunk_gamma.h"
#include "rms_norm_backward_dgamma_partial.h"
#include "rms_norm_backward_dres_chunks.h"
#include "rms_norm_backward_long_rows_store.h"
#include "rms_norm_backward_path_base.h"
#include "rms_norm_backward_row_sum.h"
#include "rms_norm_backward_rstd.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class RmsNormBackwardLongRows : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kLongRows;

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        InitBase(args, tiling, pipe, gm_, true);
        const uint32_t C = t_.chunk_cols;
        const auto layout = rmsnorm_backward::layout::LongRows(t_, sizeof(T));
        dgammaInGm_ = layout.partialBytes > 0;  // rows with gamma only (the layout's rule)
        dgammaInUb_ = layout.dgammaBytes > 0;
        const bool gammaF32 = WideGamma<T>() || layout.gammaF32;
        // The kept chunk sums beyond the lanes the others filled from a block boundary on (KeptChunkPass1).
        const uint32_t rest = t_.cols > C ? t_.cols - C : 0;
        keptSummed_ = t_.sum_cols < rest ? t_.sum_cols : rest;
        keepChunk_ = !kIsFloat<T> && gammaF32 && t_.sum_cols >= C && keptSummed_ % kFloatsPerBlock == 0 &&
                     !dgammaInGm_;
        gammaChunks_ = hasGamma_ && t_.gamma_slots > 0;
        // dres's and gamma's queue buffers hold MTE2_V ids the ring would otherwise take
        const uint32_t queueIds =
            (layout.dres ? uint32_t(kDoubleBuffer) : 0) + (gammaChunks_ ? layout.gammaBuffers : 0);
        rows_.Init(pipe_, gm_, t_, layout, kRingLandings - queueIds);
        // fp32 rows with gamma whole gain nothing from it: they keep HBM busy either way (4096 x 12288:
        // 273.2 us row by row, 273.4 side by side)
        sideBySide_ = gammaChunks_ || (rows_.Kind() != LongRowsStore::kRowBuffers && dgammaInGm_ && !kIsFloat<T>);
        if (!gammaChunks_) {
            gamma_.Init(pipe_, layout.gammaBytes, gammaF32, t_.gamma_offset);
        } else if constexpr (kIsFloat<T>) {
            gamma_.InitChunks(pipe_, layout.gammaBuffers, layout.gammaBytes, gm_.gamma, t_.cols, C, t_.gamma_offset);
        } else {
            gamma_.InitChunks(pipe_, layout.gammaBuffers, layout.gammaBytes, gm_.gammaF32, t_.cols, C,
                              t_.gamma_offset);
        }
        if (layout.dgammaBytes > 0) {
            pipe_->InitBuffer(dgammaBuf_, layout.dgammaBytes);
        }
        if (layout.partialBytes > 0) {
            partial_.Init(pipe_, layout.partialBytes, rmsnorm_backward::layout::kLongRowsPartialOutBuffers);
        }
        pipe_->InitBuffer(aBuf_, layout.chunkF32Bytes);
        pipe_->InitBuffer(bBuf_, layout.chunkF32Bytes);
        rowSum_.Init(pipe_, layout.sumBytes, layout.workBytes, t_.sum_cols, t_.cols, C);
        if (layout.dres) {
            dres_.Init(pipe_, layout.chunkBytes);
        }
        rstd_.Init(pipe_, gm_.rstd);
    }

    __aicore__ inline void Process()
    {
        if (rows_.Kind() == LongRowsStore::kRowBuffers) {
            RunGroups<LongRowsStore::kRowBuffers>();
        } else if (rows_.Kind() == LongRowsStore::kRing) {
            RunGroups<LongRowsStore::kRing>();
        } else {
            RunGroups<LongRowsStore::kRingDxOverDy>();
        }
    }

private:
    using Chunk = typename LongRowsRowStore<T>::Chunk;
    // dgamma's accumulator in UB; an empty tensor where there is none (no gamma, or dgamma in GM).
    __aicore__ inline LocalTensor<float> Dgamma() { return dgammaInUb_ ? dgammaBuf_.Get<float>() : LocalTensor<float>(); }

    template <LongRowsStore store>
    __aicore__ inline void RunGroups()
    {
        // (dgamma is zeroed after; the layouts with dgamma in GM hold gamma as it is loaded)
        // (a 16-bit gamma widened once goes through dgamma's buffer, or a's where dgamma is in GM)
        TBuf<QuePosition::VECCALC> &scratch = dgammaInUb_ ? dgammaBuf_ : aBuf_;
        const uint32_t scratchCols = dgammaInUb_ ? t_.row_stride * 2 : t_.chunk_cols * 2;
        if (!gammaChunks_) {
            LoadGammaWhole(gm_, gamma_.Buffer(), scratch.Get<T>(), scratchCols, gamma_.InF32());
        }
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            partialGm_ = gm_.Partial(t_, groupIdx);
            if (dgammaInUb_) {
                Duplicate(Dgamma(), 0.0f, t_.cols);
            }
            rstd_.Start(group);  // before the group's row copies
            rows_.template Start<store>(group);
            const uint32_t ahead = rows_.template Ahead<store>();
            for (uint64_t row = group.begin; row < group.end && row < group.begin + ahead; ++row) {
                rows_.template CopyInRow<store>(row);
            }
            if (sideBySide_) {
                if constexpr (store != LongRowsStore::kRowBuffers) {
                    ComputeRowsSideBySide<store>(group);
                }
            } else {
                for (uint64_t row = group.begin; row < group.end; ++row) {
                    // The row's first dres chunk (read in pass 2, the next one a chunk ahead) goes before
                    // the next row's copies, so it lands while pass 1 runs.
                    if (hasDres_) {
                        CopyInDres(row, 0);
                    }
                    if (store == LongRowsStore::kRowBuffers && row + ahead < group.end) {
                        rows_.template CopyInRow<store>(row + ahead);
                    }
                    ComputeRow<store>(row, row == group.begin, row + 1 == group.end);
                }
            }
            // dgamma: the group's rows wrote it (pass 1 of the last row, or each pass 2 in GM); a group
            // without rows owes zeros
            if (dgammaInGm_) {
                if (group.begin == group.end) {
                    partial_.Zero(partialGm_, 0, t_.cols, t_.chunk_cols);
                }
                continue;
            }
            if (group.begin == group.end) {
                CopyOutDgamma(partialGm_, Dgamma(), t_.cols);
            }
            WaitDgammaLeft();
        }
        rows_.template Release<store>();
    }

    // With xhat = x*rstd the per-row factor rstd moves out of the lanes: dy*xhat = rstd*(dy*x),
    // mean(g*xhat) = rstd*mean(gamma*dy*x) and dx = rstd*(dy*gamma - (rstd*mean(g*xhat))*x); the fused
    // Axpy and MulAddDst leave 13 vector instructions per element for 16-bit data (7 for fp32, whose
    // dgamma takes dy*xhat: Pass1) in two fp32 scratch chunks a and b and the lane-wise row sum
    // (sum_cols lanes: one more MulAddDst per further sum_cols of a chunk); 11 with gamma in fp32, 9 for
    // the chunk a row keeps widened. fp16 forms dy*x from the halves (HalfProduct), one fewer, and with
    // its fp16 gamma dy*gamma too (HalfProductAxpy): 10 either way.
    template <LongRowsStore store>
    __aicore__ inline void ComputeRow(uint64_t row, bool firstRow, bool lastRow)
    {
        rows_.template BeginRow<store>();
        const float rstd = rstd_.Get(row);
        Pass1<store>(rstd, firstRow);
        if (lastRow && !dgammaInGm_) {  // the group's dgamma is final: it leaves while pass 2 runs, not after it
            CopyOutDgamma(partialGm_, Dgamma(), t_.cols);
        }
        const float xScale = XScale(rstd);
        Pass2<store>(row, rstd, xScale, firstRow);
        rows_.template EndRow<store>();
    }

    // Pass 1: dgamma += rstd*(dy*x); the row sum of gamma*(dy*x). A kept chunk (keepChunk_: chunk 0)
    // goes last and stays widened for pass 2 (KeptChunkPass1); the ring's chunks are taken in order.
    // fp32 dgamma takes dy*xhat with xhat = rstd*x rounded first (as the rows-in-UB and small-cols paths
    // do), one instruction more than rstd*(dy*x): the product dy*x of fp32 data is rounded, and that
    // rounding does not depend on rstd, so rows that repeat (padding, repeated tokens) would add the same
    // error to dgamma once per repeat; rounded after rstd enters, the errors of such rows differ and
    // partly cancel. (16-bit dy*x is exact in fp32, so its rstd*(dy*x) has no such common error.)
    // fp32 dgamma in GM is summed in pass 2 instead (DgammaInGm); 16-bit dgamma in GM takes rstd*(dy*x)
    // here as in UB, added into the group's partial (its first row writes it).
    template <LongRowsStore store>
    __aicore__ inline void Pass1(float rstd, bool firstRow)
    {
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        for (uint32_t i = 0; i < chunks; ++i) {
            const uint32_t chunk = keepChunk_ ? (i + 1) % chunks : i;
            if (keepChunk_ && i == 0 && chunk != 0) {
                rows_.template Take<store>(0);
            }
            Pass1Chunk<store>(chunk, i, rstd, firstRow);
        }
    }

    // Pass 1 over the row's chunk `chunk`, the i-th it takes.
    template <LongRowsStore store>
    __aicore__ inline void Pass1Chunk(uint32_t chunk, uint32_t i, float rstd, bool firstRow)
    {
        const LocalTensor<float> a = aBuf_.Get<float>(), b = bBuf_.Get<float>();
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        const Chunk c = rows_.template Load<store>(chunk, !(keepChunk_ && chunk == 0 && chunks > 1));
        if (keepChunk_ && chunk == 0) {
            KeptChunkPass1(a, b, rowSum_.Lanes(), Dgamma(), hasGamma_ ? gamma_.WholeF32() : LocalTensor<float>(),
                           c.dy, c.x, rstd, hasGamma_, c.count, keptSummed_);
            return;
        }
        const LocalTensor<float> dyX = a;
        if constexpr (kIsFloat<T>) {
            if (dgammaInUb_) {  // dgamma first: b = xhat, then dyX (b is free again after)
                Muls(b, c.x, rstd, c.count);
                MulAddDst(Dgamma()[c.begin], c.dy, b, c.count);
            }
        }
        DyTimesX(dyX, b, c.dy, c.x, c.count);
        if (hasGamma_) {
            if constexpr (!kIsFloat<T>) {
                if (dgammaInGm_) {
                    partial_.Accumulate(partialGm_, dyX, rstd, c.begin, c.count, firstRow);
                } else {
                    Axpy(Dgamma()[c.begin], dyX, rstd, c.count);
                }
            }
            rowSum_.Add<true>(gamma_.Scale(b, c.begin, c.count), dyX, b, chunk, i == 0, c.count);
        } else {
            rowSum_.Add<false>(b, dyX, b, chunk, i == 0, c.count);
        }
    }

    // dgamma in GM, fp32 rows: pass 2 adds dy*xhat into the group's partial (atomically after the
    // group's first row), xhat = rstd*x rounded first as in pass 1, before dx is written over dy. Pass 1
    // then holds the vector unit only for the row sum, so the spare slots' copies cover it, and the
    // partial's writes join dx's on MTE3.
    __aicore__ inline void DgammaInGm(const Chunk &c, float rstd, bool firstRow)
    {
        const LocalTensor<float> xhat = bBuf_.Get<float>();
        Muls(xhat, c.x, rstd, c.count);
        partial_.AddProduct(partialGm_, c.dy, xhat, c.begin, c.count, firstRow);
    }

    // x's factor in dx: -rstd*mean(g*xhat), the row sum reduced across its lanes (or chunks); a kept
    // chunk scaled the sum by rstd already.
    __aicore__ inline float XScale(float rstd)
    {
        const float meanGXhat = rowSum_.Total(pipe_) * t_.inv_cols * (keepChunk_ ? 1.0f : rstd);
        return -(rstd * meanGXhat);
    }

    // Pass 2: dx = rstd*(dy*gamma + xScale*x), rounded to the dtype; in the ring each slot pass 2 is
    // done with takes the next chunk.
    template <LongRowsStore store>
    __aicore__ inline void Pass2(uint64_t row, float rstd, float xScale, bool firstRow)
    {
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
            Pass2Chunk<store>(row, chunk, rstd, xScale, firstRow);
        }
    }

    // Pass 2 over the row's chunk `chunk`.
    template <LongRowsStore store>
    __aicore__ inline void Pass2Chunk(uint64_t row, uint32_t chunk, float rstd, float xScale, bool firstRow)
    {
        const LocalTensor<float> a = aBuf_.Get<float>(), b = bBuf_.Get<float>();
        const Chunk c = rows_.template Load<store>(chunk, false);
        if (hasDres_ && chunk + 1 < CeilDiv(t_.cols, t_.chunk_cols)) {
            CopyInDres(row, chunk + 1);
        }
        const LocalTensor<float> g = a;
        float dxScale = rstd;
        if (keepChunk_ && chunk == 0) {  // g = a + rstd*xScale*x holds rstd already
            Axpy(g, b, rstd * xScale, c.count);
            dxScale = 1.0f;
        } else if (hasGamma_) {
            gamma_.DyTimesPlusX(g, b, c.dy, c.x, xScale, c.begin, c.count);
        } else if constexpr (kIsFloat<T>) {  // g = dy + xScale*x, dy left as it is
            Muls(g, c.x, xScale, c.count);
            Add(g, g, c.dy, c.count);
        } else {
            Widen(g, c.dy, c.count);
            Axpy(g, AsFloat(b, c.x, c.count), xScale, c.count);
        }
        if constexpr (kIsFloat<T>) {
            if (dgammaInGm_) {
                DgammaInGm(c, rstd, firstRow);
            }
        }
        rows_.template DoneWithX<store>();
        const LocalTensor<T> dx = rows_.template Dx<store>(c);
        ComputeDx(dx, g, dxScale, c.count);
        rows_.template SendDx<store>(row * t_.cols + c.begin, dx, c.count, chunk);
    }

    // Rings with dgamma in GM (sideBySide_): pass 2 of a row and pass 1 of the next go chunk by chunk
    // side by side, P2(r, c) then P1(r + 1, c). Pass 1 then takes the next row's chunks one at a time,
    // as pass 2 frees slots for them, not all of them at the row's start, so HBM streams at an even
    // rate: where dx's writes go to HBM too, the row-by-row order leaves it idle while pass 1 waits
    // (16384 x 16384 fp16: 935.1 us side by side, 1048.2 row by row). With gamma through chunk buffers
    // (fp32 rows) both steps read gamma's chunk c from one copy, so gamma costs the row one read of its
    // bytes, not two. The spare slots (at least two, the tiler's rule) hold the next row's chunks that
    // land before pass 2 frees their own slots. (No kept chunk: that needs a dgamma in UB.)
    template <LongRowsStore store>
    __aicore__ inline void ComputeRowsSideBySide(const RowGroup &group)
    {
        if (group.begin == group.end) {
            return;
        }
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        gamma_.StartChunks(uint32_t(group.end - group.begin) + 1);
        float rstd = rstd_.Get(group.begin);
        for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
            gamma_.TakeChunk(chunk);
            Pass1Chunk<store>(chunk, chunk, rstd, true);
            gamma_.ReleaseChunk();
        }
        for (uint64_t row = group.begin; row < group.end; ++row) {
            if (hasDres_) {
                CopyInDres(row, 0);
            }
            const float xScale = XScale(rstd);
            const bool next = row + 1 < group.end;
            const float nextRstd = next ? rstd_.Get(row + 1) : 0.0f;
            for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
                gamma_.TakeChunk(chunk);
                Pass2Chunk<store>(row, chunk, rstd, xScale, row == group.begin);
                if (next) {
                    Pass1Chunk<store>(chunk, chunk, nextRstd, false);
                }
                gamma_.ReleaseChunk();
            }
            rows_.template EndRow<store>();
            rstd = nextRstd;
        }
    }

    // dx = rstd*g, plus the chunk's dres (dequeued here) added in fp32 in b, which pass 2 is done with.
    __aicore__ inline void ComputeDx(const LocalTensor<T> &dx, const LocalTensor<float> &g, float rstd, uint32_t count)
    {
        if (!hasDres_) {
            ScaleToDx(dx, g, rstd, count);
            return;
        }
        dres_.AddTo(dx, g, rstd, bBuf_.Get<float>(), count);
    }

    __aicore__ inline void CopyInDres(uint64_t row, uint32_t chunk)
    {
        const uint32_t begin = chunk * t_.chunk_cols;
        dres_.Read(gm_.dres, row * t_.cols + begin, ChunkCols(t_.cols, begin, t_.chunk_cols));
    }

    OperatorGm<T> gm_;
    GlobalTensor<float> partialGm_;
    RstdBatches rstd_;
    bool dgammaInGm_ = false;   // dgamma goes through the group's GM partial chunk by chunk (dgamma_ub_cols 0)
    bool dgammaInUb_ = false;   // dgamma is summed whole in UB (neither of the two without gamma)
    bool gammaChunks_ = false;  // gamma through chunk buffers (ChunkGamma::TakeChunk)
    bool sideBySide_ = false;   // pass 2 of a row beside pass 1 of the next (ComputeRowsSideBySide)
    bool keepChunk_ = false;    // a 16-bit row keeps chunk 0 widened from pass 1 to pass 2 (KeptChunkPass1)
    uint32_t keptSummed_ = 0;   // the row-sum lanes the other chunks fill before the kept chunk
    LongRowsRowStore<T> rows_;  // where the rows wait: row buffers or rings, and dx's way out
    DgammaPartial partial_;     // dgamma in GM: the partial's chunks in (one fetched ahead) and out
    DresChunks<T> dres_;        // pass 2 reads a chunk's dres, the next one queued
    ChunkGamma<T> gamma_;       // gamma whole, as the chunks read it
    LongRowSum rowSum_;         // the row sum of g*xhat and its total
    TBuf<QuePosition::VECCALC> dgammaBuf_, aBuf_, bBuf_;
};

}  // namespace rmsnorm_backward::kernel
