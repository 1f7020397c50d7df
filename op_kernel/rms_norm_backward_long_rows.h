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
// UB layout: LongRows in rms_norm_backward_ub_layout.h, which the tiling sums to pick the store.
#pragma once
#include "rms_norm_backward_path_base.h"
#include "rms_norm_backward_rstd.h"

namespace rms_norm_backward_impl {

// MTE2_V event ids the ring holds for its landings: the TPipe's 8 less one for WaitFor<MTE2_V>.
constexpr uint32_t kRingLandings = 7;

// Where a row's dy and x wait in UB, fixed per launch by the tiling (row_buffers, dx_over_dy); each
// store runs as its own instantiation of the row loop.
enum class LongRowsStore : uint32_t {
    kRowBuffers,    // 2 or 3 whole-row queue buffers: the next rows are queued early
    kRing,          // rings of chunk slots, dx through a queue of its own
    kRingDxOverDy,  // rings of chunk slots, dx written over dy's slot (UB too tight for a dx queue)
};

template <typename T>
class RmsNormBackwardLongRows : RmsNormBackwardPathBase {
public:
    static constexpr RmsNormBackwardPath kPath = RmsNormBackwardPath::kLongRows;

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
    {
        InitBase(args, tiling, pipe, gm_);
        const uint32_t C = t_.chunk_cols;
        store_ = t_.row_buffers != 1 ? LongRowsStore::kRowBuffers
                                      : (t_.dx_over_dy != 0 ? LongRowsStore::kRingDxOverDy : LongRowsStore::kRing);
        sumPerChunk_ = t_.sum_cols == 0;
        const auto layout = rms_norm_backward_layout::LongRows(t_.cols, sizeof(T), C, t_.row_buffers,
                                                               store_ != LongRowsStore::kRingDxOverDy, t_.sum_cols,
                                                               t_.spare_slots);
        if (store_ != LongRowsStore::kRowBuffers) {
            slots_ = uint32_t(layout.ringSlots);
            for (uint32_t i = 0; i < slots_; ++i) {
                pipe_->InitBuffer(dy_.slot[i], layout.chunkBytes);
                pipe_->InitBuffer(x_.slot[i], layout.chunkBytes);
            }
            for (uint32_t i = 0; i < kRingLandings; ++i) {
                landed_[i] = pipe_->AllocEventID<HardEvent::MTE2_V>();
            }
        } else {
            pipe_->InitBuffer(inQueDyRow_, t_.row_buffers, layout.rowBytes);
            pipe_->InitBuffer(inQueXRow_, t_.row_buffers, layout.rowBytes);
        }
        pipe_->InitBuffer(gammaBuf_, layout.gammaBytes);
        pipe_->InitBuffer(dgammaBuf_, layout.dgammaBytes);
        pipe_->InitBuffer(aBuf_, layout.chunkF32Bytes);
        pipe_->InitBuffer(bBuf_, layout.chunkF32Bytes);
        pipe_->InitBuffer(sumBuf_, layout.sumBytes);
        dxLeft_ = pipe_->AllocEventID<HardEvent::MTE3_MTE2>();
        if (store_ != LongRowsStore::kRingDxOverDy) {
            pipe_->InitBuffer(outQueDx_, kDoubleBuffer, layout.chunkBytes);
        }
        rstd_.Init(pipe_, gm_.rstd);
        pipe_->InitBuffer(workBuf_, layout.workBytes);
        pipe_->InitBuffer(rowSumBuf_, kBlockBytes);
    }

    __aicore__ inline void Process()
    {
        if (store_ == LongRowsStore::kRowBuffers) {
            RunGroups<LongRowsStore::kRowBuffers>();
        } else if (store_ == LongRowsStore::kRing) {
            RunGroups<LongRowsStore::kRing>();
        } else {
            RunGroups<LongRowsStore::kRingDxOverDy>();
        }
    }

private:
    // A ring's next chunk to receive.
    struct FillCursor {
        uint64_t row, end;  // the next row to receive, and the group's end
        uint32_t begin;     // the next chunk's first col
    };
    // A ring of chunk slots: the i-th chunk it receives lands in slot i % slots_ (slots are freed in
    // the order they were filled).
    struct Ring {
        TBuf<QuePosition::VECCALC> slot[kMaxRowSlots];
        FillCursor fill;
        uint64_t received = 0;
    };
    // The row in whole-row buffers (empty in the ring layouts).
    struct RowView {
        LocalTensor<T> dy, x;
    };
    // The chunk's inputs: views of the resident row (or the ring's slots) and of gamma.
    struct Chunk {
        uint32_t begin, count;
        LocalTensor<T> dy, x, gamma;
    };

    template <LongRowsStore store>
    __aicore__ inline void RunGroups()
    {
        // No flag of its own: the vector unit first reads gamma after a row's DeQue, whose MTE2 -> V
        // flag waits for every earlier copy-in, this one too.
        CopyInPad(gammaBuf_.Get<T>(), gm_.gamma, t_.cols);
        for (uint32_t groupIdx = FirstGroup(); groupIdx < t_.groups; groupIdx = NextGroup(groupIdx)) {
            const RowGroup group = GroupRows(t_, groupIdx);
            partialGm_ = gm_.Partial(t_, groupIdx);
            Duplicate(dgammaBuf_.Get<float>(), 0.0f, t_.cols);
            rstd_.Start(group);  // before the group's row copies
            dy_.fill = {group.begin, group.end, 0};
            x_.fill = dy_.fill;
            // Row buffers: rows stream in `ahead` rows before they are computed (the ring refills itself).
            const uint32_t ahead = store == LongRowsStore::kRowBuffers ? t_.row_buffers - 1 : 1;
            for (uint64_t row = group.begin; row < group.end && row < group.begin + ahead; ++row) {
                CopyInRow<store>(row);
            }
            for (uint64_t row = group.begin; row < group.end; ++row) {
                if (store == LongRowsStore::kRowBuffers && row + ahead < group.end) {
                    CopyInRow<store>(row + ahead);
                }
                ComputeRow<store>(row, row + 1 == group.end);
            }
            if (group.begin == group.end) {  // (the last row's pass 1 wrote it; a group without rows owes zeros)
                CopyOutDgamma(partialGm_, dgammaBuf_.Get<float>(), t_.cols);
            }
            WaitDgammaLeft();
        }
        for (uint32_t i = 0; store != LongRowsStore::kRowBuffers && i < kRingLandings; ++i) {
            pipe_->ReleaseEventID<HardEvent::MTE2_V>(landed_[i]);
        }
    }

    template <LongRowsStore store>
    __aicore__ inline void CopyInRow(uint64_t row)
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            for (uint32_t i = 0; i < slots_; ++i) {
                Refill(x_, gm_.x, true);
                Refill(dy_, gm_.dy, store == LongRowsStore::kRing);
            }
        } else {
            LocalTensor<T> dyRow = inQueDyRow_.AllocTensor<T>();
            LocalTensor<T> xRow = inQueXRow_.AllocTensor<T>();
            CopyInPad(dyRow, gm_.dy[row * t_.cols], t_.cols);
            CopyInPad(xRow, gm_.x[row * t_.cols], t_.cols);
            inQueDyRow_.EnQue(dyRow);
            inQueXRow_.EnQue(xRow);
        }
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

    template <LongRowsStore store>
    __aicore__ inline Chunk LoadChunk(const RowView &rowView, uint32_t chunk, bool firstPass)
    {
        Chunk c;
        c.begin = chunk * t_.chunk_cols;
        c.count = t_.cols - c.begin < t_.chunk_cols ? t_.cols - c.begin : t_.chunk_cols;
        c.gamma = gammaBuf_.Get<T>()[c.begin];
        if constexpr (store != LongRowsStore::kRowBuffers) {
            if (firstPass) {  // the ring's next chunk: wait until it has landed
                while (landingsWaited_ <= taken_) {
                    WaitLanding();
                }
                slotOf_[chunk] = uint32_t(taken_ % slots_);
                ++taken_;
            }
            c.dy = dy_.slot[slotOf_[chunk]].template Get<T>();
            c.x = x_.slot[slotOf_[chunk]].template Get<T>();
        } else {
            c.dy = rowView.dy[c.begin];
            c.x = rowView.x[c.begin];
        }
        return c;
    }

    // The fp32 view of a chunk input: the input itself for fp32, else widened into `scratch`.
    __aicore__ inline LocalTensor<float> AsFloat(const LocalTensor<float> &scratch, const LocalTensor<T> &src,
                                                 uint32_t count)
    {
        if constexpr (kIsFloat<T>) {
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
    template <LongRowsStore store>
    __aicore__ inline void ComputeRow(uint64_t row, bool lastRow)
    {
        RowView rowView;
        if constexpr (store == LongRowsStore::kRowBuffers) {
            rowView.dy = inQueDyRow_.DeQue<T>();
            rowView.x = inQueXRow_.DeQue<T>();
        }
        const float rstd = rstd_.Get(row);
        Pass1<store>(rowView, rstd);
        if (lastRow) {  // the group's dgamma is final: it leaves while pass 2 runs, not after it
            CopyOutDgamma(partialGm_, dgammaBuf_.Get<float>(), t_.cols);
        }
        const float xScale = XScale(rstd);
        Pass2<store>(rowView, row, rstd, xScale);
        if constexpr (store == LongRowsStore::kRowBuffers) {
            inQueDyRow_.FreeTensor(rowView.dy);
            inQueXRow_.FreeTensor(rowView.x);
        }
    }

    // Pass 1: dgamma += rstd*(dy*x); the row sum of gamma*(dy*x).
    template <LongRowsStore store>
    __aicore__ inline void Pass1(const RowView &rowView, float rstd)
    {
        const LocalTensor<float> a = aBuf_.Get<float>(), b = bBuf_.Get<float>();
        for (uint32_t chunk = 0; chunk < CeilDiv(t_.cols, t_.chunk_cols); ++chunk) {
            const Chunk c = LoadChunk<store>(rowView, chunk, true);
            const LocalTensor<float> dyX = a;
            Mul(dyX, AsFloat(a, c.dy, c.count), AsFloat(b, c.x, c.count), c.count);
            Axpy(dgammaBuf_.Get<float>()[c.begin], dyX, rstd, c.count);
            AddRowSum(AsFloat(b, c.gamma, c.count), dyX, chunk, c.count);
        }
    }

    // The row sum of gamma*(dy*x): per chunk into sum[chunk] (sum_cols = 0), else lane-wise over
    // the chunks in sum_cols lanes.
    __aicore__ inline void AddRowSum(const LocalTensor<float> &gamma, const LocalTensor<float> &dyX, uint32_t chunk,
                                     uint32_t count)
    {
        const LocalTensor<float> sum = sumBuf_.Get<float>();
        if (sumPerChunk_) {
            const LocalTensor<float> b = bBuf_.Get<float>();
            Mul(b, gamma, dyX, count);
            ReduceSum(sum[chunk], b, workBuf_.Get<float>(), count);
            return;
        }
        for (uint32_t p = 0; p < count; p += t_.sum_cols) {
            const uint32_t n = count - p < t_.sum_cols ? count - p : t_.sum_cols;
            if (chunk == 0 && p == 0) {
                Mul(sum, gamma, dyX, n);
            } else {
                MulAddDst(sum, gamma[p], dyX[p], n);
            }
        }
    }

    // x's factor in dx: -rstd*mean(g*xhat), the row sum reduced across its lanes (or chunks).
    __aicore__ inline float XScale(float rstd)
    {
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        const uint32_t sumCount = sumPerChunk_ ? chunks : (t_.cols < t_.sum_cols ? t_.cols : t_.sum_cols);
        const float meanGXhat = RowSum(sumBuf_.Get<float>(), sumCount) * t_.inv_cols * rstd;
        return -(rstd * meanGXhat);
    }

    // Pass 2: dx = rstd*(dy*gamma + xScale*x), rounded to the dtype; in the ring each slot pass 2 is
    // done with takes the next chunk.
    template <LongRowsStore store>
    __aicore__ inline void Pass2(const RowView &rowView, uint64_t row, float rstd, float xScale)
    {
        const LocalTensor<float> a = aBuf_.Get<float>(), b = bBuf_.Get<float>();
        const uint32_t chunks = CeilDiv(t_.cols, t_.chunk_cols);
        for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
            const Chunk c = LoadChunk<store>(rowView, chunk, false);
            const LocalTensor<float> g = a;
            Mul(g, AsFloat(a, c.dy, c.count), AsFloat(b, c.gamma, c.count), c.count);
            Axpy(g, AsFloat(b, c.x, c.count), xScale, c.count);
            if constexpr (store != LongRowsStore::kRowBuffers) {
                Refill(x_, gm_.x, true);
            }
            const uint64_t offset = row * t_.cols + c.begin;
            if constexpr (store == LongRowsStore::kRingDxOverDy) {
                ScaleToDx(c.dy, g, rstd, c.count);
                CopyOutOverDy(offset, c.dy, c.count, chunk);
            } else {
                const LocalTensor<T> dx = outQueDx_.AllocTensor<T>();
                ScaleToDx(dx, g, rstd, c.count);
                outQueDx_.EnQue(dx);
                if constexpr (store == LongRowsStore::kRing) {
                    Refill(dy_, gm_.dy, true);
                }
                CopyOut(offset, c.count);
            }
        }
        if constexpr (store == LongRowsStore::kRingDxOverDy) {
            RefillAfterDx();
        }
    }

    __aicore__ inline void ScaleToDx(const LocalTensor<T> &dx, const LocalTensor<float> &g, float rstd, uint32_t count)
    {
        if constexpr (kIsFloat<T>) {
            Muls(dx, g, rstd, count);
        } else {
            Muls(g, g, rstd, count);
            Narrow(dx, g, count);
        }
    }

    // dx replaced dy in the slot: once dx has left, the next row's chunk may land there (one chunk late).
    __aicore__ inline void CopyOutOverDy(uint64_t offset, const LocalTensor<T> &dx, uint32_t count, uint32_t chunk)
    {
        WaitFor<HardEvent::V_MTE3>(pipe_);
        CopyOutPad(gm_.dx[offset], dx, count);
        SetFlag<HardEvent::MTE3_MTE2>(dxLeft_);
        if (chunk > 0) {
            RefillAfterDx();
        }
    }

    // The oldest slot whose dx is out (its flag set right after its copy-out) takes dy's next chunk.
    // Called one chunk late: waiting for the copy-out just issued would start the refill and the next
    // copy-out together, and the HBM channel would idle while both set up (two chunks late holds slots
    // back from the ring too long).
    __aicore__ inline void RefillAfterDx()
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
        LocalTensor<T> dx = outQueDx_.DeQue<T>();
        CopyOutPad(gm_.dx[offset], dx, count);
        outQueDx_.FreeTensor(dx);
    }

    OperatorGm<T> gm_;
    GlobalTensor<float> partialGm_;
    RstdBatches rstd_;
    LongRowsStore store_ = LongRowsStore::kRowBuffers;
    bool sumPerChunk_ = false;  // tiling.sum_cols == 0: the row sum is reduced per chunk, then over the chunks
    TEventID dxLeft_ = 0;       // MTE3 -> MTE2: a slot's dx has left, so it may be refilled
    Ring dy_, x_;               // the rings: one slot per chunk of the row, plus spare slots
    uint32_t slots_ = 0;        // slots per ring
    uint32_t slotOf_[kMaxRowSlots] = {};   // the current row's chunks: their slots, in order
    TEventID landed_[kRingLandings] = {};  // MTE2 -> V: dy's chunk (and x's before it) has landed
    uint64_t landingsSet_ = 0, landingsWaited_ = 0;  // dy chunks received, and waited for by the vector unit
    uint64_t taken_ = 0;                             // dy chunks taken by pass 1
    TQue<QuePosition::VECIN, kMaxRowBuffers> inQueDyRow_, inQueXRow_;  // the next rows are queued early
    TQue<QuePosition::VECOUT, 1> outQueDx_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, aBuf_, bBuf_, sumBuf_, workBuf_, rowSumBuf_;
};

}  // namespace rms_norm_backward_impl
