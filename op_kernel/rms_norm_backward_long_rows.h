// Long rows: one row at a time. The row's dy and x stay in UB in their own dtype and are widened to
// fp32 in chunks of C cols, twice: pass 1 sums g*xhat for the row mean and adds dy*xhat into dgamma,
// pass 2 writes dx. So each byte of dy and x is read from GM once. The next rows stream in meanwhile:
// into spare row buffers when two or three rows fit, else into rings of chunk slots (one for dy, one
// for x), each slot refilled as soon as pass 2 is done with it (dy's: once the dx written over it has
// left) and taken by the next row's pass 1 as soon as it has landed. The ring's slots are plain
// buffers ordered by flags, not queue buffers: a queued or freed queue buffer holds one of the TPipe's
// 8 event ids of its event, and a ring holds up to kMaxRowSlots. A chunk's x lands before its dy, so
// one MTE2_V flag per dy chunk tells pass 1 both have landed; at most kRingLandings such flags are
// pending (beyond that the vector unit waits for the oldest). Rows too long to keep whole take the
// streamed path instead (rms_norm_backward_long_rows_streamed.h).
//
// UB layout: LongRows in rms_norm_backward_ub_layout.h, which the tiling sums to pick the layout.
#pragma once
#include "rms_norm_backward_common.h"
#include "rms_norm_backward_rstd.h"

namespace rms_norm_backward_impl {

// MTE2_V event ids the ring holds for its landings: the TPipe's 8 less one for WaitFor<MTE2_V>.
constexpr uint32_t kRingLandings = 7;

template <typename T>
class RmsNormBackwardLongRows {
public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        gm_.Init(dy, x, rstd, gamma, dx, dgamma, workspace, t_);
        const uint32_t C = t_.chunk_cols;
        ring_ = t_.row_buffers == 1;
        dxOverDy_ = ring_ && t_.dx_over_dy != 0;
        sumPerChunk_ = t_.sum_cols == 0;
        const auto layout = rms_norm_backward_layout::LongRows(t_.cols, sizeof(T), C, t_.row_buffers, !dxOverDy_,
                                                               t_.sum_cols, t_.spare_slots);
        if (ring_) {
            slots_ = uint32_t(layout.ringSlots);
            for (uint32_t i = 0; i < slots_; ++i) {
                pipe_->InitBuffer(dy_.slot[i], layout.chunkBytes);
                pipe_->InitBuffer(x_.slot[i], layout.chunkBytes);
            }
            for (uint32_t i = 0; i < kRingLandings; ++i) {
                landed_[i] = pipe_->AllocEventID<HardEvent::MTE2_V>();
            }
        } else {
            pipe_->InitBuffer(dyRowQue_, t_.row_buffers, layout.rowBytes);
            pipe_->InitBuffer(xRowQue_, t_.row_buffers, layout.rowBytes);
        }
        pipe_->InitBuffer(gammaBuf_, layout.gammaBytes);
        pipe_->InitBuffer(dgammaBuf_, layout.dgammaBytes);
        pipe_->InitBuffer(aBuf_, layout.chunkF32Bytes);
        pipe_->InitBuffer(bBuf_, layout.chunkF32Bytes);
        pipe_->InitBuffer(sumBuf_, layout.sumBytes);
        dxLeft_ = pipe_->AllocEventID<HardEvent::MTE3_MTE2>();
        if (!dxOverDy_) {
            pipe_->InitBuffer(dxQue_, 2, layout.chunkBytes);
        }
        rstd_.Init(pipe_, gm_.rstd);
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(rowSumBuf_, kBlockBytes);
    }

    __aicore__ inline void Process()
    {
        // No flag of its own: the vector unit first reads gamma after a row's DeQue, whose MTE2 -> V
        // flag waits for every earlier copy-in, this one too.
        CopyInPad(gammaBuf_.Get<T>(), gm_.gamma, t_.cols);
        for (uint32_t g = GetBlockIdx(); g < t_.groups; g += GetBlockNum()) {
            const RowGroup group = GroupRows(t_, g);
            partialGm_ = gm_.Partial(t_, g);
            Duplicate(dgammaBuf_.Get<float>(), 0.0f, t_.cols);
            rstd_.Start(group);  // before the group's row copies
            dy_.fill = {group.begin, group.end, 0};
            x_.fill = dy_.fill;
            // Row buffers: rows stream in `ahead` rows before they are computed (the ring refills itself).
            const uint32_t ahead = ring_ ? 1 : t_.row_buffers - 1;
            for (uint64_t row = group.begin; row < group.end && row < group.begin + ahead; ++row) {
                CopyInRow(row);
            }
            for (uint64_t row = group.begin; row < group.end; ++row) {
                if (!ring_ && row + ahead < group.end) {
                    CopyInRow(row + ahead);
                }
                Compute(row, row + 1 == group.end);
            }
            if (group.begin == group.end) {  // (the last row's pass 1 wrote it; a group without rows owes zeros)
                WaitFor<HardEvent::V_MTE3>(pipe_);
                CopyOutPad(partialGm_, dgammaBuf_.Get<float>(), t_.cols);
            }
            WaitFor<HardEvent::MTE3_V>(pipe_);  // the next group zeroes dgamma once it has left
        }
        for (uint32_t i = 0; ring_ && i < kRingLandings; ++i) {
            pipe_->ReleaseEventID<HardEvent::MTE2_V>(landed_[i]);
        }
    }

private:
    static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

    // A ring's next chunk to receive.
    struct FillCursor {
        uint64_t row, end;  // the next row to receive, and the group's end
        uint32_t begin;     // the next chunk's first col
    };
    // A ring of chunk slots: the k-th chunk it receives lands in slot k % slots_ (slots are freed in
    // the order they were filled).
    struct Ring {
        TBuf<QuePosition::VECCALC> slot[kMaxRowSlots];
        FillCursor fill;
        uint64_t received = 0;
    };

    // The chunk's inputs: views of the resident row (or the ring's slots) and of gamma.
    struct Chunk {
        uint32_t begin;
        uint32_t count;
        LocalTensor<T> dy, x, gamma;
    };

    __aicore__ inline void CopyInRow(uint64_t row)
    {
        if (ring_) {
            for (uint32_t k = 0; k < slots_; ++k) {
                Refill(x_, gm_.x, true);
                Refill(dy_, gm_.dy, !dxOverDy_);
            }
            return;
        }
        LocalTensor<T> dyRow = dyRowQue_.AllocTensor<T>();
        LocalTensor<T> xRow = xRowQue_.AllocTensor<T>();
        CopyInPad(dyRow, gm_.dy[row * t_.cols], t_.cols);
        CopyInPad(xRow, gm_.x[row * t_.cols], t_.cols);
        dyRowQue_.EnQue(dyRow);
        xRowQue_.EnQue(xRow);
    }

    // The next chunk of dy (or x) the ring has not yet received, rows of the group in order, lands in
    // the ring's next slot, once the vector unit is done with it (afterVector; dy's slot after dx left
    // waits in RefillAfterDx instead). dy and x have rings of their own: x's slot is free once pass 2
    // has read it, dy's only once the dx written over it has left. x's chunk always lands first, so
    // dy's landing flag covers both.
    __aicore__ inline void Refill(Ring &ring, const GlobalTensor<T> &src, bool afterVector)
    {
        FillCursor &fill = ring.fill;
        if (fill.row >= fill.end) {
            return;
        }
        const bool isDy = &ring == &dy_;
        if (isDy && landingsSet_ - landingsWaited_ == kRingLandings) {
            WaitLanding();
        }
        if (afterVector) {
            WaitFor<HardEvent::V_MTE2>(pipe_);
        }
        const uint32_t n = t_.cols - fill.begin < t_.chunk_cols ? t_.cols - fill.begin : t_.chunk_cols;
        CopyInPad(ring.slot[ring.received % slots_].template Get<T>(), src[fill.row * t_.cols + fill.begin], n);
        ++ring.received;
        if (isDy) {
            SetFlag<HardEvent::MTE2_V>(landed_[landingsSet_ % kRingLandings]);
            ++landingsSet_;
        }
        fill.begin += t_.chunk_cols;
        if (fill.begin >= t_.cols) {
            fill.begin = 0;
            ++fill.row;
        }
    }
    // The vector unit waits for the oldest pending landing.
    __aicore__ inline void WaitLanding()
    {
        WaitFlag<HardEvent::MTE2_V>(landed_[landingsWaited_ % kRingLandings]);
        ++landingsWaited_;
    }

    __aicore__ inline Chunk LoadChunk(const LocalTensor<T> &dyRow, const LocalTensor<T> &xRow, uint32_t k, bool firstPass)
    {
        Chunk c;
        c.begin = k * t_.chunk_cols;
        c.count = t_.cols - c.begin < t_.chunk_cols ? t_.cols - c.begin : t_.chunk_cols;
        c.gamma = gammaBuf_.Get<T>()[c.begin];
        if (ring_) {
            if (firstPass) {  // the ring's next chunk: wait until it has landed
                while (landingsWaited_ <= taken_) {
                    WaitLanding();
                }
                slotOf_[k] = uint32_t(taken_ % slots_);
                ++taken_;
            }
            c.dy = dy_.slot[slotOf_[k]].template Get<T>();
            c.x = x_.slot[slotOf_[k]].template Get<T>();
        } else {
            c.dy = dyRow[c.begin];
            c.x = xRow[c.begin];
        }
        return c;
    }

    // The fp32 view of a chunk input: the input itself for fp32, else widened into `scratch`.
    __aicore__ inline LocalTensor<float> AsFloat(const LocalTensor<float> &scratch, const LocalTensor<T> &src,
                                                 uint32_t count)
    {
        if constexpr (IsFloat()) {
            return src;
        } else {
            Widen(scratch, src, count);
            return scratch;
        }
    }

    // With xhat = x*rstd the per-row factor rstd moves out of the lanes: dy*xhat = rstd*(dy*x),
    // mean(g*xhat) = rstd*mean(gamma*dy*x) and dx = rstd*(dy*gamma - (rstd*mean(g*xhat))*x); the fused
    // Axpy and MulAddDst leave 13 vector instructions per element for 16-bit data (6 for fp32) in two
    // fp32 scratch chunks a and b and the lane-wise row sum (sum_cols lanes: one more MulAddDst per
    // further sum_cols of a chunk).
    __aicore__ inline void Compute(uint64_t row, bool lastRow)
    {
        LocalTensor<T> dyRow, xRow;
        if (!ring_) {
            dyRow = dyRowQue_.DeQue<T>();
            xRow = xRowQue_.DeQue<T>();
        }
        const float rstd = rstd_.Get(row);
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        const LocalTensor<float> a = aBuf_.Get<float>(), b = bBuf_.Get<float>(), sum = sumBuf_.Get<float>();
        // Pass 1: dgamma += rstd*(dy*x); sum += gamma*(dy*x), lane-wise over the chunks, then across lanes.
        for (uint32_t k = 0; k < chunks; ++k) {
            const Chunk c = LoadChunk(dyRow, xRow, k, true);
            const LocalTensor<float> dyX = a;
            Mul(dyX, AsFloat(a, c.dy, c.count), AsFloat(b, c.x, c.count), c.count);
            Axpy(dgammaBuf_.Get<float>()[c.begin], dyX, rstd, c.count);
            const LocalTensor<float> gamma = AsFloat(b, c.gamma, c.count);
            if (sumPerChunk_) {  // sum[k] = sum(gamma*(dy*x)) of this chunk
                Mul(b, gamma, dyX, c.count);
                ReduceSum(sum[k], b, workBuf_.Get<float>(), c.count);
            }
            for (uint32_t p = 0; !sumPerChunk_ && p < c.count; p += t_.sum_cols) {
                const uint32_t n = c.count - p < t_.sum_cols ? c.count - p : t_.sum_cols;
                if (k == 0 && p == 0) {
                    Mul(sum, gamma, dyX, n);
                } else {
                    MulAddDst(sum, gamma[p], dyX[p], n);
                }
            }
        }
        if (lastRow) {  // the group's dgamma is final: it leaves while pass 2 runs, not after it
            WaitFor<HardEvent::V_MTE3>(pipe_);
            CopyOutPad(partialGm_, dgammaBuf_.Get<float>(), t_.cols);
        }
        const uint32_t sumCount = sumPerChunk_ ? chunks : (t_.cols < t_.sum_cols ? t_.cols : t_.sum_cols);
        const float meanGXhat = RowSum(sum, sumCount) * t_.inv_cols * rstd;
        const float xScale = -(rstd * meanGXhat);
        // Pass 2: dx = rstd*(dy*gamma + xScale*x), rounded to the dtype.
        for (uint32_t k = 0; k < chunks; ++k) {
            const Chunk c = LoadChunk(dyRow, xRow, k, false);
            const LocalTensor<float> g = a;
            Mul(g, AsFloat(a, c.dy, c.count), AsFloat(b, c.gamma, c.count), c.count);
            Axpy(g, AsFloat(b, c.x, c.count), xScale, c.count);
            if (ring_) {  // pass 2 is done with x's slot: the next chunk may land in it
                Refill(x_, gm_.x, true);
            }
            const LocalTensor<T> dxT = dxOverDy_ ? c.dy : dxQue_.AllocTensor<T>();
            if constexpr (IsFloat()) {
                Muls(dxT, g, rstd, c.count);
            } else {
                Muls(g, g, rstd, c.count);
                Narrow(dxT, g, c.count);
            }
            if (dxOverDy_) {  // dx replaced dy in the slot: once dx has left, the next row's chunk may land
                WaitFor<HardEvent::V_MTE3>(pipe_);
                CopyOutPad(gm_.dx[row * t_.cols + c.begin], dxT, c.count);
                SetFlag<HardEvent::MTE3_MTE2>(dxLeft_);
                if (k > 0) {
                    RefillAfterDx(k - 1);
                }
                continue;
            }
            dxQue_.EnQue(dxT);
            if (ring_) {
                Refill(dy_, gm_.dy, true);
            }
            CopyOut(row * t_.cols + c.begin, c.count);
        }
        if (dxOverDy_) {
            RefillAfterDx(chunks - 1);
        }
        if (!ring_) {
            dyRowQue_.FreeTensor(dyRow);
            xRowQue_.FreeTensor(xRow);
        }
    }

    // dy's slot k: its dx has left (the oldest pending flag, set right after its copy-out), so the next
    // chunk may land in it. Called one chunk late: waiting for the copy-out just issued would start the
    // refill and the next copy-out together, and the HBM channel would idle while both set up (two
    // chunks late holds slots back from the ring too long).
    __aicore__ inline void RefillAfterDx(uint32_t k)
    {
        WaitFlag<HardEvent::MTE3_MTE2>(dxLeft_);
        Refill(dy_, gm_.dy, false);
    }

    __aicore__ inline float RowSum(const LocalTensor<float> &values, uint32_t count)
    {
        const LocalTensor<float> total = rowSumBuf_.Get<float>();
        ReduceSum(total, values, workBuf_.Get<float>(), count);
        WaitFor<HardEvent::V_S>(pipe_);
        const float value = total.GetValue(0);
        WaitFor<HardEvent::S_V>(pipe_);
        return value;
    }

    __aicore__ inline void CopyOut(uint64_t offset, uint32_t count)
    {
        LocalTensor<T> dxT = dxQue_.DeQue<T>();
        CopyOutPad(gm_.dx[offset], dxT, count);
        dxQue_.FreeTensor(dxT);
    }

    RmsNormBackwardTilingData t_;
    TPipe *pipe_ = nullptr;
    OperatorGm<T> gm_;
    GlobalTensor<float> partialGm_;
    RstdBatches rstd_;
    bool ring_ = false;
    bool sumPerChunk_ = false;  // tiling.sum_cols == 0: the row sum is reduced per chunk, then over the chunks
    bool dxOverDy_ = false;  // the ring writes dx over dy's slot (tiling.dx_over_dy)
    TEventID dxLeft_ = 0;    // MTE3 -> MTE2: a slot's dx has left, so it may be refilled
    Ring dy_, x_;                      // the rings: one slot per chunk of the row, plus spare slots
    uint32_t slots_ = 0;               // slots per ring
    uint32_t slotOf_[kMaxRowSlots] = {};  // the current row's chunks: their slots, in order
    TEventID landed_[kRingLandings] = {};  // MTE2 -> V: dy's chunk (and x's before it) has landed
    uint64_t landingsSet_ = 0, landingsWaited_ = 0;  // dy chunks received, and waited for by the vector unit
    uint64_t taken_ = 0;                             // dy chunks taken by pass 1
    TQue<QuePosition::VECIN, kMaxRowBuffers> dyRowQue_, xRowQue_;  // the next rows are queued early
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, aBuf_, bBuf_, sumBuf_, workBuf_, rowSumBuf_;
};

}  // namespace rms_norm_backward_impl
