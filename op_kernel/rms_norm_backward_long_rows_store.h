// SPDX-License-Identifier: BSD-3-Clause
// Where the long-rows path's rows wait in UB (rms_norm_backward_long_rows.h), fixed per launch by the
// tiling (row_buffers, dx_over_dy): whole-row queue buffers, into which the next rows are queued early,
// or the rings of chunk slots (rms_norm_backward_long_rows_ring.h), with dx through a queue of its own
// or written over dy's slot. The store is a template argument of the path's row loop, so each call
// here compiles to its store's code alone. The path sees a row as its chunks (Chunk).
//
// UB budget: the "dy, x row buffers", "dy, x ring slots" and "dx queue" rows of the path's table.
#pragma once
#include "rms_norm_backward_long_rows_ring.h"

namespace rmsnorm_backward::kernel {

enum class LongRowsStore : uint32_t {
    kRowBuffers,    // 2 or 3 whole-row queue buffers: the next rows are queued early
    kRing,          // rings of chunk slots, dx through a queue of its own
    kRingDxOverDy,  // rings of chunk slots, dx written over dy's slot (UB too tight for a dx queue)
};

template <typename T>
class LongRowsRowStore {
public:
    // A chunk's inputs: views of the row's buffers, or the ring's slots.
    struct Chunk {
        uint32_t begin, count;
        LocalTensor<T> dy, x;
    };

    // The ring holds `landings` MTE2_V ids for its landings (the caller's queues hold the rest).
    __aicore__ inline void Init(TPipe *pipe, const OperatorGm<T> &gm, const RmsNormBackwardTilingData &t,
                                const rmsnorm_backward::layout::LongRowsLayout &layout, uint32_t landings)
    {
        kind_ = t.row_buffers != 1 ? LongRowsStore::kRowBuffers
                                    : (t.dx_over_dy != 0 ? LongRowsStore::kRingDxOverDy : LongRowsStore::kRing);
        rowBuffers_ = t.row_buffers;
        cols_ = t.cols;
        chunkCols_ = t.chunk_cols;
        dyGm_ = gm.dy;
        xGm_ = gm.x;
        dxGm_ = gm.dx;
        if (kind_ != LongRowsStore::kRowBuffers) {
            rings_.Init(pipe, gm, uint32_t(layout.ringSlots), layout.chunkBytes, t.cols, t.chunk_cols, landings);
        } else {
            pipe->InitBuffer(inQueDyRow_, t.row_buffers, layout.rowBytes);
            pipe->InitBuffer(inQueXRow_, t.row_buffers, layout.rowBytes);
        }
        if (layout.dxQueue) {
            pipe->InitBuffer(outQueDx_, kDoubleBuffer, layout.chunkBytes);
        }
    }
    __aicore__ inline LongRowsStore Kind() const { return kind_; }

    // The rows [begin, end) come next; rows stream in `Ahead` rows before they are computed (the ring
    // refills itself).
    template <LongRowsStore store>
    __aicore__ inline void Start(const RowGroup &group)
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            rings_.Start(group.begin, group.end);
        }
    }
    template <LongRowsStore store>
    __aicore__ inline uint32_t Ahead() const
    {
        return store == LongRowsStore::kRowBuffers ? rowBuffers_ - 1 : 1;
    }
    template <LongRowsStore store>
    __aicore__ inline void Release()
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            rings_.Release();
        }
    }

    // The row's copies: a row buffer each, or every slot of the rings filled.
    template <LongRowsStore store>
    __aicore__ inline void CopyInRow(uint64_t row)
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            for (uint32_t i = 0; i < rings_.Slots(); ++i) {
                rings_.RefillX();
                rings_.RefillDy(store == LongRowsStore::kRing);
            }
        } else {
            LocalTensor<T> dyRow = inQueDyRow_.AllocTensor<T>();
            LocalTensor<T> xRow = inQueXRow_.AllocTensor<T>();
            CopyInPad(dyRow, dyGm_[row * cols_], cols_);
            CopyInPad(xRow, xGm_[row * cols_], cols_);
            inQueDyRow_.EnQue(dyRow);
            inQueXRow_.EnQue(xRow);
        }
    }

    // Row buffers: the row computed next, once it has landed (the ring's chunks land one by one: Take).
    template <LongRowsStore store>
    __aicore__ inline void BeginRow()
    {
        if constexpr (store == LongRowsStore::kRowBuffers) {
            rowDy_ = inQueDyRow_.DeQue<T>();
            rowX_ = inQueXRow_.DeQue<T>();
        }
    }
    // The row is done: its row buffers take the next rows, or (dx over dy) its last chunk's dy slot
    // takes the next chunk once its dx has left.
    template <LongRowsStore store>
    __aicore__ inline void EndRow()
    {
        if constexpr (store == LongRowsStore::kRowBuffers) {
            inQueDyRow_.FreeTensor(rowDy_);
            inQueXRow_.FreeTensor(rowX_);
        } else if constexpr (store == LongRowsStore::kRingDxOverDy) {
            rings_.RefillAfterDx();
        }
    }

    // Ring: pass 1 takes the row's chunk `chunk`, the rings' next, once it has landed.
    template <LongRowsStore store>
    __aicore__ inline void Take(uint32_t chunk)
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            rings_.Take(chunk);
        }
    }
    // The row's chunk `chunk`, taken first where `take` (pass 1, unless taken ahead).
    template <LongRowsStore store>
    __aicore__ inline Chunk Load(uint32_t chunk, bool take)
    {
        Chunk c;
        c.begin = chunk * chunkCols_;
        c.count = ChunkCols(cols_, c.begin, chunkCols_);
        if constexpr (store != LongRowsStore::kRowBuffers) {
            if (take) {
                rings_.Take(chunk);
            }
            c.dy = rings_.Dy(chunk);
            c.x = rings_.X(chunk);
        } else {
            c.dy = rowDy_[c.begin];
            c.x = rowX_[c.begin];
        }
        return c;
    }

    // Pass 2 has read the chunk's x: the ring refills its slot.
    template <LongRowsStore store>
    __aicore__ inline void DoneWithX()
    {
        if constexpr (store != LongRowsStore::kRowBuffers) {
            rings_.RefillX();
        }
    }
    // Where the chunk's dx is computed: dy's slot, or the dx queue's next buffer.
    template <LongRowsStore store>
    __aicore__ inline LocalTensor<T> Dx(const Chunk &c)
    {
        if constexpr (store == LongRowsStore::kRingDxOverDy) {
            return c.dy;
        } else {
            return outQueDx_.AllocTensor<T>();
        }
    }
    // The chunk's dx leaves for dx[offset, offset + count); in the ring, dy's slot takes the next chunk
    // (over dy: once the dx has left, one chunk late).
    template <LongRowsStore store>
    __aicore__ inline void SendDx(uint64_t offset, const LocalTensor<T> &dx, uint32_t count, uint32_t chunk)
    {
        if constexpr (store == LongRowsStore::kRingDxOverDy) {
            rings_.CopyOutOverDy(offset, dx, count, chunk);
        } else {
            outQueDx_.EnQue(dx);
            if constexpr (store == LongRowsStore::kRing) {
                rings_.RefillDy(true);
            }
            LocalTensor<T> out = outQueDx_.DeQue<T>();
            CopyOutPad(dxGm_[offset], out, count);
            outQueDx_.FreeTensor(out);
        }
    }

private:
    LongRowsStore kind_ = LongRowsStore::kRowBuffers;
    uint32_t rowBuffers_ = 0, cols_ = 0, chunkCols_ = 0;
    GlobalTensor<T> dyGm_, xGm_, dxGm_;
    LongRowsRings<T> rings_;  // the ring stores' slots and landing flags
    TQue<QuePosition::VECIN, kMaxRowBuffers> inQueDyRow_, inQueXRow_;  // the next rows are queued early
    LocalTensor<T> rowDy_, rowX_;                                      // the row being computed
    TQue<QuePosition::VECOUT, 1> outQueDx_;
};

}  // namespace rmsnorm_backward::kernel
