// Long rows streamed: rows too long to keep whole in UB beside gamma and the fp32 dgamma accumulator.
// One row at a time in C-col chunks, two passes, like CANN's own kernel: pass 1 reads dy and x from
// HBM, adds dy*xhat into dgamma and sums g*xhat (g = dy*gamma); pass 2 reads them again (from L2)
// and writes dx = rstd*(g + k*xhat), k = -mean(g*xhat), over the slot's dy.
// What keeps HBM busy (measured on the twin's timeline):
// - pass 2 of a row runs chunk by chunk interleaved with pass 1 of the next row, so dx leaves while
//   the next row streams in and MTE3's writes cover MTE2's copy set-ups and L2 re-reads;
// - k stays on the vector unit (ReduceSum, Brcb, a stride-0 operand): the scalar unit never waits
//   for the row sum and keeps issuing copies;
// - every step takes the next slot of one queue in order, and each freed slot is refilled at once
//   with the step stream_slots ahead, so MTE2 runs as far ahead as the slots allow.
// Keeping part of the row in UB from pass 1 to pass 2 instead (fewer re-reads) measured slower: the
// slots it holds are missing from the stream.
// gamma stays whole in UB (gamma_slots = 0) or comes per chunk through gamma_slots buffers; dgamma is
// accumulated in UB for its leading dgamma_ub_cols (a multiple of C) and beyond them
// read-modified-written per row in the group's GM partial (rows of about 10^6 cols).
//
// UB layout: Streamed in rms_norm_backward_ub_layout.h, which the tiling sums to pick chunks and slots.
#pragma once
#include "rms_norm_backward_common.h"
#include "rms_norm_backward_rstd.h"

namespace rms_norm_backward_impl {

template <typename T>
class RmsNormBackwardLongRowsStreamed {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        gm_.Init(dy, x, rstd, gamma, dx, dgamma, workspace, t_);
        C_ = t_.chunk_cols;
        chunks_ = CeilDiv(t_.cols, C_);
        const auto layout = rms_norm_backward_layout::Streamed(t_.cols, sizeof(T), C_, t_.stream_slots, t_.gamma_slots,
                                                               t_.sum_cols, t_.dgamma_ub_cols);
        pipe_->InitBuffer(slotQue_, t_.stream_slots, layout.slotBytes);
        if (t_.gamma_slots == 0) {
            pipe_->InitBuffer(gammaBuf_, layout.gammaBytes);
        } else {
            pipe_->InitBuffer(gammaQue_, t_.gamma_slots, layout.gammaBytes);
        }
        if (layout.dgammaBytes > 0) {
            pipe_->InitBuffer(dgammaBuf_, layout.dgammaBytes);
        }
        if constexpr (!IsFloat()) {
            pipe_->InitBuffer(wideBuf_, layout.wideBytes);
        }
        pipe_->InitBuffer(sumBuf_, layout.sumBytes);
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(totalBuf_, kBlockBytes);
        pipe_->InitBuffer(coefBuf_, kRepeatBytes);
        rstdBatches_.Init(pipe_, gm_.rstd);
        if (layout.partialBytes > 0) {
            pipe_->InitBuffer(partialInQue_, 2, layout.partialBytes);
            pipe_->InitBuffer(partialOutQue_, 2, layout.partialBytes);
        }
    }

    __aicore__ inline void Process()
    {
        if (t_.gamma_slots == 0) {  // first read after a slot's DeQue, whose MTE2 -> V flag orders this copy too
            CopyInPad(gammaBuf_.Get<T>(), gm_.gamma, t_.cols);
        }
        for (uint32_t g = GetBlockIdx(); g < t_.groups; g += GetBlockNum()) {
            const RowGroup group = GroupRows(t_, g);
            partialGm_ = gm_.Partial(t_, g);
            if (t_.dgamma_ub_cols > 0) {
                Duplicate(dgammaBuf_.Get<float>(), 0.0f, t_.dgamma_ub_cols);
            }
            rstdBatches_.Start(group);  // before the group's row copies
            groupBegin_ = group.begin;
            groupEnd_ = group.end;
            const Step first{group.begin, 1, 0};
            slotFill_ = gammaFill_ = first;
            for (uint32_t i = 0; i < t_.stream_slots; ++i) {
                CopyIn(g != GetBlockIdx());  // the core's earlier group wrote dx from these slots
            }
            for (uint32_t i = 0; i < t_.gamma_slots; ++i) {
                CopyInGamma();
            }
            if (group.begin == group.end) {
                ZeroStreamedPartial();
            }
            for (Step step = first; step.row < group.end; step = Next(step)) {
                Compute(step, group);
            }
            if (t_.dgamma_ub_cols > 0) {
                WaitFor<HardEvent::V_MTE3>(pipe_);
                CopyOutPad(partialGm_, dgammaBuf_.Get<float>(), t_.dgamma_ub_cols);
                WaitFor<HardEvent::MTE3_V>(pipe_);
            }
        }
    }

private:
    static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

    // One step: chunk k of `row` in pass 1 or 2. A group runs pass 1 of its first row, then pass 2 of
    // each row chunk by chunk interleaved with pass 1 of the next: P2(r, k), P1(r+1, k), P2(r, k+1), ...
    // row == groupEnd_: no step left.
    struct Step {
        uint64_t row;
        uint32_t pass;
        uint32_t k;
    };
    __aicore__ inline Step Next(const Step &s) const
    {
        if (s.row >= groupEnd_) {
            return s;
        }
        if (s.pass == 1) {
            if (s.k + 1 == chunks_) {
                return Step{s.row, 2, 0};
            }
            return s.row == groupBegin_ ? Step{s.row, 1, s.k + 1} : Step{s.row - 1, 2, s.k + 1};
        }
        if (s.row + 1 < groupEnd_) {
            return Step{s.row + 1, 1, s.k};
        }
        return s.k + 1 < chunks_ ? Step{s.row, 2, s.k + 1} : Step{groupEnd_, 0, 0};
    }

    __aicore__ inline uint32_t Count(uint32_t k) const
    {
        const uint32_t begin = k * C_;
        return t_.cols - begin < C_ ? t_.cols - begin : C_;
    }

    // The next step's chunk of dy lands in a free slot, then its x C elements later. A slot whose dx
    // went out waits for that copy before it is overwritten.
    __aicore__ inline void CopyIn(bool afterCopyOut)
    {
        const Step s = slotFill_;
        if (s.row >= groupEnd_) {
            return;
        }
        slotFill_ = Next(s);
        LocalTensor<T> slot = slotQue_.AllocTensor<T>();
        if (afterCopyOut) {
            WaitFor<HardEvent::MTE3_MTE2>(pipe_);
        }
        const uint64_t at = s.row * t_.cols + uint64_t(s.k) * C_;
        CopyInPad(slot, gm_.dy[at], Count(s.k));
        CopyInPad(slot[C_], gm_.x[at], Count(s.k));
        slotQue_.EnQue(slot);
    }
    __aicore__ inline void CopyInGamma()
    {
        const Step s = gammaFill_;
        if (s.row >= groupEnd_) {
            return;
        }
        gammaFill_ = Next(s);
        LocalTensor<T> gamma = gammaQue_.AllocTensor<T>();
        CopyInPad(gamma, gm_.gamma[uint64_t(s.k) * C_], Count(s.k));
        gammaQue_.EnQue(gamma);
    }

    // gamma of chunk k as fp32 (widened into scratch 2 for 16-bit data); streamed chunks are freed,
    // and their slot refilled, by ReleaseGamma once the vector unit has read them.
    __aicore__ inline LocalTensor<T> TakeGamma(uint32_t k)
    {
        return t_.gamma_slots == 0 ? gammaBuf_.Get<T>()[k * C_] : gammaQue_.DeQue<T>();
    }
    __aicore__ inline void ReleaseGamma(LocalTensor<T> &gamma)
    {
        if (t_.gamma_slots != 0) {
            gammaQue_.FreeTensor(gamma);
            CopyInGamma();
        }
    }

    // The fp32 view of a chunk input: the input itself for fp32 (computed on in place), else widened
    // into scratch `i`.
    __aicore__ inline LocalTensor<float> AsFloat(uint32_t i, const LocalTensor<T> &src, uint32_t count)
    {
        if constexpr (IsFloat()) {
            return src;
        } else {
            const LocalTensor<float> wide = wideBuf_.Get<float>()[i * C_];
            Widen(wide, src, count);
            return wide;
        }
    }

    __aicore__ inline void Compute(const Step &step, const RowGroup &group)
    {
        if (step.pass == 1) {
            Pass1(step.row, step.k, group);
        } else {
            Pass2(step.row, step.k);
        }
    }

    // Both passes start the same: xhat = x*rstd and g = dy*gamma; pass 1 first adds dy*xhat into dgamma.
    __aicore__ inline void Prepare(const LocalTensor<T> &slot, uint32_t k, float rstd, bool addDgamma, bool firstRow,
                                   LocalTensor<float> &g, LocalTensor<float> &xhat)
    {
        const uint32_t n = Count(k);
        g = AsFloat(0, slot, n);
        xhat = AsFloat(1, slot[C_], n);
        Muls(xhat, xhat, rstd, n);
        if (addDgamma) {
            AddDgamma(g, xhat, k * C_, n, firstRow);
        }
        LocalTensor<T> gamma = TakeGamma(k);
        Mul(g, g, AsFloat(2, gamma, n), n);
        ReleaseGamma(gamma);
    }

    // Pass 1 of chunk k: dgamma += dy*xhat, sum += g*xhat (lane-wise); after the row's last chunk,
    // the row's k. The slot is free again at once.
    __aicore__ inline void Pass1(uint64_t row, uint32_t k, const RowGroup &group)
    {
        if (k == 0) {
            rstd_[row & 1] = rstdBatches_.Get(row);
        }
        LocalTensor<T> slot = slotQue_.DeQue<T>();
        LocalTensor<float> g, xhat;
        Prepare(slot, k, rstd_[row & 1], true, row == group.begin, g, xhat);
        AddRowSum(g, xhat, Count(k), k == 0);
        slotQue_.FreeTensor(slot);
        CopyIn(false);
        if (k + 1 == chunks_) {
            RowScale();
        }
    }

    // Pass 2 of chunk k: dx = rstd*(g + k*xhat), rounded to the dtype, leaves from the slot's dy.
    __aicore__ inline void Pass2(uint64_t row, uint32_t k)
    {
        const float rstd = rstd_[row & 1];
        LocalTensor<T> slot = slotQue_.DeQue<T>();
        const uint32_t n = Count(k);
        LocalTensor<float> g, xhat;
        Prepare(slot, k, rstd, false, false, g, xhat);
        AddScaled(g, xhat, n);
        Muls(g, g, rstd, n);
        if constexpr (!IsFloat()) {
            Narrow(slot, g, n);
        }
        CopyOut(row * t_.cols + k * C_, slot, n);
        slotQue_.FreeTensor(slot);
        CopyIn(true);
    }

    // sum[0, SC) += g*xhat over the chunk in pieces of SC lanes; the row's first piece initialises it.
    __aicore__ inline void AddRowSum(const LocalTensor<float> &g, const LocalTensor<float> &xhat, uint32_t count,
                                     bool firstChunk)
    {
        const LocalTensor<float> sum = sumBuf_.Get<float>();
        for (uint32_t p = 0; p < count; p += t_.sum_cols) {
            const uint32_t n = count - p < t_.sum_cols ? count - p : t_.sum_cols;
            if (firstChunk && p == 0) {
                Mul(sum, g, xhat, n);
            } else {
                MulAddDst(sum, g[p], xhat[p], n);
            }
        }
    }

    // k = -sum(g*xhat)/cols into the first block of coefBuf_, without the scalar unit. The row's
    // pass 2 follows its pass 1 in the vector unit's program order, so one k is live at a time.
    __aicore__ inline void RowScale()
    {
        const LocalTensor<float> total = totalBuf_.Get<float>();
        const uint32_t lanes = t_.cols < t_.sum_cols ? t_.cols : t_.sum_cols;
        ReduceSum(total, sumBuf_.Get<float>(), workBuf_.Get<float>(), lanes);
        Muls(total, total, -t_.inv_cols, 1);
        Brcb(coefBuf_.Get<float>(), total, 1, BrcbRepeatParams(1, 8));
    }

    // g += k*xhat, k read by every repeat (src1 strides 0). The lanes past `count` up to the next
    // repeat lie inside the slot or scratch and never reach GM.
    __aicore__ inline void AddScaled(const LocalTensor<float> &g, const LocalTensor<float> &xhat, uint32_t count)
    {
        MulAddDst(g, xhat, coefBuf_.Get<float>(), uint64_t(kFloatsPerRepeat), CeilDiv(count, kFloatsPerRepeat),
                  BinaryRepeatParams(1, 1, 0, 8, 8, 0));
    }

    // dgamma += dy*xhat: in UB for the resident cols; beyond them in the group's GM partial, which
    // the group's first row writes and later rows read back. The read of chunk k needs the previous
    // row's write of it to have landed (MTE3 -> MTE2): the step P2(row - 1, k) between the two waits
    // for MTE3 before it refills its slot (CopyIn), and stream_slots < chunks keeps that refill from
    // running out before the group's last row, so no flag of its own is needed here.
    __aicore__ inline void AddDgamma(const LocalTensor<float> &dy, const LocalTensor<float> &xhat, uint32_t begin,
                                     uint32_t count, bool firstRow)
    {
        if (begin < t_.dgamma_ub_cols) {
            MulAddDst(dgammaBuf_.Get<float>()[begin], dy, xhat, count);
            return;
        }
        LocalTensor<float> out = partialOutQue_.AllocTensor<float>();
        Mul(out, dy, xhat, count);
        if (!firstRow) {
            LocalTensor<float> in = partialInQue_.AllocTensor<float>();
            CopyInPad(in, partialGm_[begin], count);
            partialInQue_.EnQue(in);
            in = partialInQue_.DeQue<float>();
            Add(out, out, in, count);
            partialInQue_.FreeTensor(in);
        }
        partialOutQue_.EnQue(out);
        out = partialOutQue_.DeQue<float>();
        CopyOutPad(partialGm_[begin], out, count);
        partialOutQue_.FreeTensor(out);
    }

    // A group without rows still owes zeros for the GM part of its partial.
    __aicore__ inline void ZeroStreamedPartial()
    {
        for (uint32_t begin = t_.dgamma_ub_cols; begin < t_.cols; begin += C_) {
            const uint32_t n = t_.cols - begin < C_ ? t_.cols - begin : C_;
            LocalTensor<float> out = partialOutQue_.AllocTensor<float>();
            Duplicate(out, 0.0f, n);
            partialOutQue_.EnQue(out);
            out = partialOutQue_.DeQue<float>();
            CopyOutPad(partialGm_[begin], out, n);
            partialOutQue_.FreeTensor(out);
        }
    }

    // dx leaves from the slot it was computed in, once the vector unit is done with it.
    __aicore__ inline void CopyOut(uint64_t offset, const LocalTensor<T> &dx, uint32_t count)
    {
        WaitFor<HardEvent::V_MTE3>(pipe_);
        CopyOutPad(gm_.dx[offset], dx, count);
    }

    RmsNormBackwardTilingData t_;
    TPipe *pipe_ = nullptr;
    OperatorGm<T> gm_;
    GlobalTensor<float> partialGm_;
    uint32_t C_ = 0, chunks_ = 0;
    RstdBatches rstdBatches_;
    uint64_t groupBegin_ = 0, groupEnd_ = 0;
    Step slotFill_{}, gammaFill_{};  // the step each queue loads next
    float rstd_[2] = {};             // per row parity: two rows are in flight
    TQue<QuePosition::VECIN, kMaxRowSlots> slotQue_, gammaQue_;
    TQue<QuePosition::VECIN, 1> partialInQue_;
    TQue<QuePosition::VECOUT, 1> partialOutQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, wideBuf_, sumBuf_, workBuf_, totalBuf_, coefBuf_;
};

}  // namespace rms_norm_backward_impl
