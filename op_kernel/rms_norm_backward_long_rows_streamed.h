// SPDX-License-Identifier: BSD-3-Clause
// Long rows streamed: rows too long to keep whole in UB beside gamma and the fp32 dgamma accumulator
// (for 16-bit rows: in chunks of at least 3072 cols, see op_host/tiling/long_rows_tiler.cpp).
// One row at a time in C-col chunks, two passes, like CANN's own kernel (ops-nn rms_norm_grad's
// split_d): pass 1 reads dy and x from
// HBM, adds dy*xhat into dgamma and sums g*xhat (g = dy*gamma); pass 2 reads them again (from L2)
// and writes dx = rstd*(g + coef*xhat), coef = -mean(g*xhat), over the slot's dy.
// What keeps HBM busy (measured on the twin's timeline):
// - pass 2 of a row runs chunk by chunk interleaved with pass 1 of the next row, so dx leaves while
//   the next row streams in and MTE3's writes cover MTE2's copy set-ups and L2 re-reads;
// - coef stays on the vector unit (ReduceSum, Brcb, a stride-0 operand): the scalar unit never waits
//   for the row sum and keeps issuing copies;
// - every step takes the next slot of one queue in order, and each freed slot is refilled at once
//   with the step stream_slots ahead, so MTE2 runs as far ahead as the slots allow.
// Keeping part of the row in UB from pass 1 to pass 2 instead (fewer re-reads) measured slower: the
// slots it holds are missing from the stream.
// gamma stays whole in UB (gamma_slots = 0) or comes per chunk through gamma_slots buffers; dgamma is
// accumulated in UB for its leading dgamma_ub_cols (a multiple of C) and beyond them added per row
// into the group's GM partial (rows of about 10^6 cols: rms_norm_backward_dgamma_partial.h).
//
// UB budget: Streamed in rms_norm_backward_ub_layout.h, which InitBuffer and the tiling both use (the
// tiling sums it to pick chunks and slots); tests/kernel/test_ub_budget.py checks this table against both.
// Each buffer takes its bytes rounded up to 32.  N = cols, s = sizeof(T), C = chunk_cols,
// SS = stream_slots, GS = gamma_slots, SC = sum_cols, DR = dgamma_ub_cols, E = has_dres, g = gamma_bytes
//   | buffer                        | buffers           | bytes each             |
//   | dy, x slot pairs              | SS                | 2 * C * s              |
//   | gamma whole                   | GS == 0           | N * g                  |
//   | gamma chunk slots             | GS                | C * g                  |
//   | dgamma head (fp32)            | 1                 | DR * 4                 |
//   | dy, x, gamma widened          | s < 4             | 3 * C * 4              |
//   | row sum                       | 1                 | SC * 4                 |
//   | ReduceSum work                | 1                 | up(cdiv(SC, 64), 8) * 4 |
//   | row total                     | 1                 | 32                     |
//   | coef (a repeat)               | 1                 | 256                    |
//   | rstd batches                  | 2                 | 64 * 4                 |
//   | dgamma partial out            | 2 * (DR < N)      | C * 4                  |
//   | dres queue                    | 2 * E             | C * s                  |
#pragma once
#include "rms_norm_backward_chunk_math.h"
#include "rms_norm_backward_path_base.h"
#include "rms_norm_backward_rstd.h"
#include "rms_norm_backward_dgamma_partial.h"
#include "rms_norm_backward_dres_chunks.h"
#include "rms_norm_backward_streamed_steps.h"

namespace rmsnorm_backward::kernel {

template <typename T>
class RmsNormBackwardLongRowsStreamed : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kLongRowsStreamed;

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        InitBase(args, tiling, pipe, gm_, false);
        C_ = t_.chunk_cols;
        chunks_ = CeilDiv(t_.cols, C_);
        const auto layout = rmsnorm_backward::layout::Streamed(t_, sizeof(T));
        pipe_->InitBuffer(inQueSlot_, t_.stream_slots, layout.slotBytes);
        if (layout.gammaBytes > 0 && t_.gamma_slots == 0) {
            pipe_->InitBuffer(gammaBuf_, layout.gammaBytes);
        } else if (layout.gammaBytes > 0) {
            pipe_->InitBuffer(inQueGamma_, t_.gamma_slots, layout.gammaBytes);
        }
        if (layout.dgammaBytes > 0) {
            pipe_->InitBuffer(dgammaBuf_, layout.dgammaBytes);
        }
        if constexpr (!kIsFloat<T>) {
            pipe_->InitBuffer(wideBuf_, layout.wideBytes);
        }
        pipe_->InitBuffer(sumBuf_, layout.sumBytes);
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(totalBuf_, kBlockBytes);
        pipe_->InitBuffer(coefBuf_, kRepeatBytes);
        rstdBatches_.Init(pipe_, gm_.rstd);
        if (layout.partialBytes > 0) {
            partial_.Init(pipe_, layout.partialBytes, kDoubleBuffer);
        }
        if (layout.dresBytes > 0) {
            dres_.Init(pipe_, layout.dresBytes);
        }
    }

    __aicore__ inline void Process()
    {
        if (t_.gamma_slots == 0) {
            LoadGammaWhole(gm_, gammaBuf_, LocalTensor<T>(), 0, false);
        }
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            partialGm_ = gm_.Partial(t_, groupIdx);
            if (hasGamma_ && t_.dgamma_ub_cols > 0) {
                Duplicate(dgammaBuf_.Get<float>(), 0.0f, t_.dgamma_ub_cols);
            }
            rstdBatches_.Start(group);  // before the group's row copies
            steps_.Start(group.begin, group.end, chunks_);
            const StreamedStep first{group.begin, 1, 0};
            slotFill_ = gammaFill_ = first;
            dresFill_ = StreamedStep{group.begin, 2, 0};
            dresPending_ = dresQueued_ = 0;
            for (uint32_t i = 0; i < t_.stream_slots; ++i) {
                CopyIn(groupIdx != FirstGroup());  // the core's earlier group wrote dx from these slots
            }
            for (uint32_t i = 0; hasGamma_ && i < t_.gamma_slots; ++i) {
                CopyInGamma();
            }
            if (hasGamma_ && group.begin == group.end) {
                partial_.Zero(partialGm_, t_.dgamma_ub_cols, t_.cols, C_);
            }
            for (StreamedStep step = first; !steps_.Done(step); step = steps_.Next(step)) {
                Compute(step, group);
            }
            if (t_.dgamma_ub_cols > 0) {
                CopyOutDgamma(partialGm_, dgammaBuf_.Get<float>(), t_.dgamma_ub_cols);
                WaitDgammaLeft();
            }
        }
    }

private:
    __aicore__ inline uint32_t Count(uint32_t chunk) const
    {
        return ChunkCols(t_.cols, chunk * C_, C_);
    }

    // The next step's chunk of dy lands in a free slot, then its x C elements later. A slot whose dx
    // went out waits for that copy before it is overwritten.
    __aicore__ inline void CopyIn(bool afterCopyOut)
    {
        const StreamedStep s = slotFill_;
        if (steps_.Done(s)) {
            return;
        }
        slotFill_ = steps_.Next(s);
        LocalTensor<T> slot = inQueSlot_.AllocTensor<T>();
        if (afterCopyOut) {
            WaitFor<HardEvent::MTE3_MTE2>(pipe_);
        }
        const uint64_t at = s.row * t_.cols + uint64_t(s.chunk) * C_;
        CopyInPad(slot, gm_.dy[at], Count(s.chunk));
        CopyInPad(slot[C_], gm_.x[at], Count(s.chunk));
        inQueSlot_.EnQue(slot);
        if (hasDres_ && s.pass == 2) {
            ++dresPending_;
            TopUpDres();
        }
    }
    __aicore__ inline void CopyInGamma()
    {
        const StreamedStep s = gammaFill_;
        if (steps_.Done(s)) {
            return;
        }
        gammaFill_ = steps_.Next(s);
        if (WideGamma<T>()) {
            LocalTensor<float> gamma = inQueGamma_.AllocTensor<float>();
            CopyInPad(gamma, gm_.gammaF32[uint64_t(s.chunk) * C_], Count(s.chunk));
            inQueGamma_.EnQue(gamma);
        } else {
            LocalTensor<T> gamma = inQueGamma_.AllocTensor<T>();
            CopyInPad(gamma, gm_.gamma[uint64_t(s.chunk) * C_], Count(s.chunk));
            inQueGamma_.EnQue(gamma);
        }
    }

    // The scale gamma + gamma_offset of chunk `chunk` in fp32, until ReleaseScale: fp32 gamma held
    // whole (float32 beside 16-bit data too) got its offset when it was loaded; a streamed float32
    // chunk takes it in its slot, a 16-bit one after its widening into scratch kWideGamma, which a
    // 16-bit gamma held whole keeps for the next step: P2(r, c) is followed by P1(r + 1, c), so each
    // chunk is widened once per row, not twice. Streamed chunks are freed, and their slot refilled, by
    // ReleaseScale once the vector unit has read them.
    __aicore__ inline LocalTensor<float> TakeScale(uint32_t chunk, uint32_t count)
    {
        if (GammaIsFloat()) {
            if (t_.gamma_slots == 0) {
                return gammaBuf_.Get<float>()[chunk * C_];
            }
            takenF32_ = inQueGamma_.DeQue<float>();
            AddGammaOffset(takenF32_, t_.gamma_offset, count);
            return takenF32_;
        }
        if (t_.gamma_slots == 0 && chunk == wideGammaChunk_) {  // P1(r + 1, c) right after P2(r, c)
            return wideBuf_.Get<float>()[kWideGamma * C_];
        }
        takenT_ = t_.gamma_slots == 0 ? gammaBuf_.Get<T>()[chunk * C_] : inQueGamma_.DeQue<T>();
        const LocalTensor<float> scale = AsFloat(kWideGamma, takenT_, count);
        AddGammaOffset(scale, t_.gamma_offset, count);
        wideGammaChunk_ = chunk;
        return scale;
    }
    __aicore__ inline void ReleaseScale()
    {
        if (t_.gamma_slots == 0) {
            return;
        }
        if (GammaIsFloat()) {
            inQueGamma_.FreeTensor(takenF32_);
        } else {
            inQueGamma_.FreeTensor(takenT_);
        }
        CopyInGamma();
    }

    // 16-bit data: the fp32 scratch chunks dy, x and gamma are widened into.
    static constexpr uint32_t kWideDy = 0, kWideX = 1, kWideGamma = 2;

    // The fp32 view of a chunk input: the input itself for fp32 (computed on in place), else widened
    // into scratch chunk `i`.
    __aicore__ inline LocalTensor<float> AsFloat(uint32_t i, const LocalTensor<T> &src, uint32_t count)
    {
        if constexpr (kIsFloat<T>) {
            return src;
        } else {
            const LocalTensor<float> wide = wideBuf_.Get<float>()[i * C_];
            Widen(wide, src, count);
            return wide;
        }
    }

    __aicore__ inline void Compute(const StreamedStep &step, const RowGroup &group)
    {
        if (step.pass == 1) {
            Pass1(step.row, step.chunk, group);
        } else {
            Pass2(step.row, step.chunk);
        }
    }

    // With xhat = x*rstd, the row's rstd moves out of the lanes (as on the long-rows path):
    // dy*xhat = rstd*(dy*x) and sum(g*xhat) = rstd*sum(gamma*(dy*x)), so pass 1 needs no xhat and
    // pass 2 computes dx = rstd*(dy*gamma + coef*x) with coef = -rstd^2*sum(gamma*dy*x)/cols.
    // fp32 data with a gamma is the exception (XhatFirst): dgamma takes dy*xhat, xhat = rstd*x rounded
    // first (as on the rows-in-UB and small-cols paths), so the row sum holds one rstd already. The
    // product dy*x of fp32 data is rounded, and that rounding does not depend on rstd: rows that repeat
    // (padding, repeated tokens) would add the same error to dgamma once per repeat, where rounded after
    // rstd enters their errors differ and partly cancel. (16-bit dy*x is exact in fp32.)
    // Per chunk of 16-bit data: pass 1 issues 4 vector instructions (gamma stays widened from the pass 2
    // step before it) and a MulAddDst per sum_cols lanes, pass 2 issues 7 (fp32: 3 and the MulAddDsts,
    // then 3); 13 in all for two row-sum pieces, once 16. With dres, pass 2 widens it and folds rstd in
    // by one Axpy: 8 (fp32: 4).
    __aicore__ inline bool XhatFirst() const { return kIsFloat<T> && hasGamma_; }

    // Pass 1 of the chunk: dgamma += rstd*(dy*x), sum += gamma*(dy*x) (lane-wise; fp32 with a gamma:
    // dgamma += dy*xhat, sum += gamma*(dy*xhat)); after the row's last chunk, the row's coef. The slot is
    // free again at once (x's half holds xhat then: pass 2 reads x again).
    __aicore__ inline void Pass1(uint64_t row, uint32_t chunk, const RowGroup &group)
    {
        if (chunk == 0) {
            rstd_[row % kRowsInFlight] = rstdBatches_.Get(row);
        }
        const float rstd = rstd_[row % kRowsInFlight];
        LocalTensor<T> slot = inQueSlot_.DeQue<T>();
        const uint32_t n = Count(chunk);
        const LocalTensor<float> dyX = AsFloat(kWideDy, slot, n);
        const LocalTensor<float> x = AsFloat(kWideX, slot[C_], n);
        if (XhatFirst()) {
            Muls(x, x, rstd, n);
        }
        Mul(dyX, dyX, x, n);
        if (hasGamma_) {
            AddDgamma(dyX, XhatFirst() ? 1.0f : rstd, chunk * C_, n, row == group.begin);
            AddLaneSum<true>(sumBuf_.Get<float>(), TakeScale(chunk, n), dyX, n, t_.sum_cols, chunk == 0);
            ReleaseScale();
        } else {
            AddLaneSum<false>(sumBuf_.Get<float>(), dyX, dyX, n, t_.sum_cols, chunk == 0);
        }
        inQueSlot_.FreeTensor(slot);
        CopyIn(false);
        if (chunk + 1 == chunks_) {
            RowScale(rstd);
        }
    }

    // Pass 2 of the chunk: dx = rstd*(dy*gamma + coef*x), rounded to the dtype, leaves from the slot's dy.
    __aicore__ inline void Pass2(uint64_t row, uint32_t chunk)
    {
        const float rstd = rstd_[row % kRowsInFlight];
        LocalTensor<T> slot = inQueSlot_.DeQue<T>();
        const uint32_t n = Count(chunk);
        const LocalTensor<float> g = AsFloat(kWideDy, slot, n);
        if (hasGamma_) {
            Mul(g, g, TakeScale(chunk, n), n);
            ReleaseScale();
        }
        AddScaled(g, AsFloat(kWideX, slot[C_], n), n);
        if (hasDres_) {
            AddScaledDres(slot, g, rstd, n);
        } else {
            ScaleToDx(slot, g, rstd, n);
        }
        CopyOut(row * t_.cols + chunk * C_, slot, n);
        inQueSlot_.FreeTensor(slot);
        CopyIn(true);
    }

    // dx = rstd*g + the chunk's dres in fp32, into the slot: 16-bit dres is widened into x's scratch
    // (free now); fp32 g is the slot itself.
    __aicore__ inline void AddScaledDres(const LocalTensor<T> &slot, const LocalTensor<float> &g, float rstd,
                                         uint32_t count)
    {
        dres_.AddTo(slot, g, rstd, kIsFloat<T> ? g : wideBuf_.Get<float>()[kWideX * C_], count);
        --dresQueued_;
        TopUpDres();
    }

    // dres follows the pass-2 steps whose slots have been filled, as far as its buffers allow: a chunk's
    // copy goes out right behind its slot's (not behind the slots filled after it), so it lands in time.
    __aicore__ inline void TopUpDres()
    {
        for (; dresPending_ > 0 && dresQueued_ < kDoubleBuffer; --dresPending_, ++dresQueued_) {
            dres_.Read(gm_.dres, dresFill_.row * t_.cols + uint64_t(dresFill_.chunk) * C_, Count(dresFill_.chunk));
            do {
                dresFill_ = steps_.Next(dresFill_);
            } while (!steps_.Done(dresFill_) && dresFill_.pass != 2);
        }
    }

    // coef = -rstd^2*sum(gamma*dy*x)/cols (= -rstd*sum(gamma*dy*xhat)/cols, XhatFirst) into the first
    // block of coefBuf_; the vector unit sums, so the scalar unit never waits for it. The row's pass 2
    // follows its pass 1 in the vector unit's program order, so one coef is live at a time.
    __aicore__ inline void RowScale(float rstd)
    {
        const LocalTensor<float> total = totalBuf_.Get<float>();
        const uint32_t lanes = t_.cols < t_.sum_cols ? t_.cols : t_.sum_cols;
        ReduceSum(total, sumBuf_.Get<float>(), workBuf_.Get<float>(), lanes);
        Muls(total, total, -(rstd * ((XhatFirst() ? 1.0f : rstd) * t_.inv_cols)), 1);
        Brcb(coefBuf_.Get<float>(), total, 1, BrcbRepeatParams(1, kBlocksPerRepeat));
    }

    // g += coef*x, coef read by every repeat (src1 strides 0). The lanes past `count` up to the next
    // repeat lie inside the slot or scratch and never reach GM.
    __aicore__ inline void AddScaled(const LocalTensor<float> &g, const LocalTensor<float> &xhat, uint32_t count)
    {
        MulAddDst(g, xhat, coefBuf_.Get<float>(), uint64_t(kFloatsPerRepeat), CeilDiv(count, kFloatsPerRepeat),
                  Src1OneBlock());
    }

    // dgamma += scale*dyX: in UB for the resident cols, beyond them in the group's GM partial.
    __aicore__ inline void AddDgamma(const LocalTensor<float> &dyX, float scale, uint32_t begin, uint32_t count,
                                     bool firstRow)
    {
        if (begin < t_.dgamma_ub_cols) {
            Axpy(dgammaBuf_.Get<float>()[begin], dyX, scale, count);
        } else {
            partial_.Accumulate(partialGm_, dyX, scale, begin, count, firstRow);
        }
    }

    // dx leaves from the slot it was computed in, once the vector unit is done with it.
    __aicore__ inline void CopyOut(uint64_t offset, const LocalTensor<T> &dx, uint32_t count)
    {
        WaitFor<HardEvent::V_MTE3>(pipe_);
        CopyOutPad(gm_.dx[offset], dx, count);
    }

    // Rows whose rstd is in use at once: one row's pass 1 overlaps the row before's pass 2.
    static constexpr uint32_t kRowsInFlight = 2;

    OperatorGm<T> gm_;
    GlobalTensor<float> partialGm_;
    uint32_t C_ = 0, chunks_ = 0;
    RstdBatches rstdBatches_;
    StreamedSteps steps_;  // the group's steps in the order they run
    StreamedStep slotFill_{}, gammaFill_{}, dresFill_{};  // the step each queue loads next (dres: pass-2 steps)
    uint32_t dresPending_ = 0;  // pass-2 steps whose slot is filled and whose dres is not yet queued
    uint32_t dresQueued_ = 0;   // dres chunks queued and not yet freed
    static constexpr uint32_t kNoChunk = 0xFFFFFFFFu;
    uint32_t wideGammaChunk_ = kNoChunk;  // the 16-bit gamma chunk scratch kWideGamma holds widened
    LocalTensor<T> takenT_;          // the gamma chunk TakeScale took from its slot (16-bit gamma)
    LocalTensor<float> takenF32_;    // (float32 gamma)
    float rstd_[kRowsInFlight] = {};  // by row parity
    TQue<QuePosition::VECIN, kMaxRowSlots> inQueSlot_, inQueGamma_;
    DresChunks<T> dres_;  // pass 2 reads a chunk's dres, the next one queued
    DgammaPartial partial_;  // dgamma's cols beyond dgamma_ub_cols
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, wideBuf_, sumBuf_, workBuf_, totalBuf_, coefBuf_;
};

}  // namespace rmsnorm_backward::kernel
