// SPDX-License-Identifier: BSD-3-Clause
// The Unified Buffer layout of every kernel path, written once: the kernels size their InitBuffer
// calls from it and the host tiling (op_host/tiling) sums the same buffers to decide what fits. Plain
// constexpr C++ over the tiling's numbers, so it compiles for the NPU, for the CPU twin and on the host.
// Each buffer is counted as InitBuffer places it: its bytes rounded up to whole 32-byte blocks. Each
// path's kernel header shows its budget as a table (buffer, buffers, bytes each), which
// tests/kernel/test_ub_budget.py evaluates against LaunchUbBytes and the twin's measured peak.
#pragma once
#include <cstdint>

#include "rms_norm_backward_tiling_data.h"

#ifdef __aicore__
#define RMSNB_LAYOUT __aicore__ inline constexpr
#else
#define RMSNB_LAYOUT inline constexpr
#endif

namespace rmsnorm_backward::layout {

// Granules of the vector unit the layout (and the kernels' repeat arithmetic) is built on.
inline constexpr uint32_t kBlockBytes = 32;    // UB address and DataCopy granule
inline constexpr uint32_t kRepeatBytes = 256;  // one vector repeat: 8 blocks
inline constexpr uint32_t kFloatsPerBlock = kBlockBytes / sizeof(float);
inline constexpr uint32_t kFloatsPerRepeat = kRepeatBytes / sizeof(float);
// Event ids per hardware event (e.g. MTE2_V) of one TPipe (dav-c220's QUE_MAX_EVENT): a queued or
// freed queue buffer holds one, so at most this many buffers of one queue position are in flight.
inline constexpr uint32_t kEventIdsPerEvent = 8;
// Buffers of a queue that streams tiles or chunks: one is filled while the other is computed on.
inline constexpr int32_t kDoubleBuffer = 2;

RMSNB_LAYOUT uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
RMSNB_LAYOUT uint64_t RoundUp(uint64_t a, uint64_t b) { return CeilDiv(a, b) * b; }
RMSNB_LAYOUT uint64_t Blocks(uint64_t bytes) { return RoundUp(bytes, kBlockBytes); }

// Elements of the dtype (element size s) in one row as UB holds it: cols rounded up to a block.
RMSNB_LAYOUT uint64_t RowStride(uint64_t cols, uint32_t s) { return RoundUp(cols, kBlockBytes / s); }

// ReduceSum's work area for `count` fp32 elements: one value per repeat, in whole blocks.
RMSNB_LAYOUT uint64_t ReduceWorkBytes(uint64_t count)
{
    return RoundUp(CeilDiv(count, kFloatsPerRepeat), kFloatsPerBlock) * sizeof(float);
}

// Rows in UB: tiles of R rows of S = row_stride elements. fp32 rows are computed row by row in
// fp32 rows of work; 16-bit rows a tile at a time, so their fp32 work buffers are tiles of R rows.
struct RowsInUbLayout {
    uint64_t tileBytes;    // dy, x, dx queues: 2 tiles each
    uint64_t rstdBytes;    // rstd queue: 2 tiles' rows
    uint64_t gammaBytes;   // gamma in its dtype (g bytes an element; 0 without gamma)
    uint64_t workF32Bytes; // one fp32 work buffer: a row (fp32 data) or a tile (16-bit data)
    uint32_t buffersF32;   // dgamma and g; 16-bit rows also gamma, a = rstd*dy and b = x widened
    uint64_t workBytes;    // ReduceSum work
    uint64_t sumBytes;     // the row sums, a block per row of a tile (one row at a time: one block)
    bool dres;             // a dres queue (2 tiles) beside dy, x and dx
};
RMSNB_LAYOUT RowsInUbLayout RowsInUb(uint64_t R, uint64_t S, uint32_t s, bool dres, uint32_t g)
{
    const uint64_t workRows = s < sizeof(float) ? R : 1;
    return {R * S * s, R * sizeof(float), S * g, workRows * S * sizeof(float), s < sizeof(float) ? 5u : 2u,
            ReduceWorkBytes(S), workRows * kBlockBytes, dres};
}
RMSNB_LAYOUT uint64_t UbBytes(const RowsInUbLayout &l)
{
    return (l.dres ? 4 : 3) * kDoubleBuffer * Blocks(l.tileBytes) + kDoubleBuffer * Blocks(l.rstdBytes) +
           Blocks(l.gammaBytes) + l.buffersF32 * Blocks(l.workF32Bytes) + Blocks(l.workBytes) + Blocks(l.sumBytes);
}

// Small cols: tiles of R rows packed S = row_stride apart. A row's scalars (rstd, c) take one block
// per row where a row is 24 to 64 lanes or two or more whole repeats (S >= 128), else S lanes. A
// block per row costs each row a repeat of its own (S of 64 lanes busy) in the instructions that
// scale rows; spread, each scalar takes S/8 Brcb calls and, where S does not divide 64, gamma a
// whole tile: the blocks cost less from S = 24 (the modelled 1M x 16 fp16 is 25 % slower with them,
// 1M x 32 and x 48 faster). Widened gamma is one 64-lane pattern where S divides 64, one row where
// rows are blocks, else the whole tile; gammaRows (the tiling's gamma_slots) lays it over that many
// rows instead, where the tiler has room for it beside the tile: a row of gamma read with repeat
// stride 0 scales a tile in one instruction per 64-lane column chunk, a tile of it in one.
struct SmallColsLayout {
    uint64_t lanes;         // R * S
    bool rowBlocks;         // a row's scalar is one block
    uint64_t perRowLanes;   // lanes of one row's scalar
    uint64_t gammaLanes;    // lanes of widened gamma
    uint64_t rstdBatchRows; // rstd rows per copy: kSmallColsRstdBatchTiles tiles
    uint64_t rows;          // R
    bool dres;              // a dres queue (2 tiles) beside dy, x and dx
};
RMSNB_LAYOUT SmallColsLayout SmallCols(uint64_t R, uint64_t S, bool dres, uint64_t gammaRows = 0)
{
    const bool rowBlocks = (S >= 3 * kFloatsPerBlock && S <= kFloatsPerRepeat) || S >= 2 * kFloatsPerRepeat;
    const uint64_t gammaLanes = gammaRows != 0 ? gammaRows * S
                                : kFloatsPerRepeat % S == 0 ? kFloatsPerRepeat : (rowBlocks ? S : R * S);
    return {R * S, rowBlocks, rowBlocks ? kFloatsPerBlock : S, gammaLanes, kSmallColsRstdBatchTiles * R, R, dres};
}
// dy, x, dx (and dres) queues (2 tiles each, dtype), the rstd queue (2 batches), fp32 a, xhat, g,
// dgamma (a tile each), rstd and c per row, gamma, -rstd/cols of an rstd batch and the row sums' two
// halves (R each).
RMSNB_LAYOUT uint64_t UbBytes(const SmallColsLayout &l, uint32_t s)
{
    return (l.dres ? 4 : 3) * kDoubleBuffer * Blocks(l.lanes * s) + kDoubleBuffer * Blocks(l.rstdBatchRows * sizeof(float)) +
           4 * Blocks(l.lanes * sizeof(float)) + 2 * Blocks(l.rows * l.perRowLanes * sizeof(float)) +
           Blocks(l.gammaLanes * sizeof(float)) + Blocks(l.rstdBatchRows * sizeof(float)) +
           2 * Blocks(l.rows * sizeof(float));
}

// Long rows, held whole: dy and x in `rowBuffers` row buffers of S = row_stride elements, or in a
// ring of C-col slots (rowBuffers = 1) holding the row's chunks plus `spareSlots`; gamma whole (16-bit
// gamma in fp32 where GammaInF32), or (gammaSlots > 0, fp32 rows in a ring) through gammaSlots C-col
// chunk buffers; dgamma whole, or (dgammaInGm) through an fp32 partial chunk on its
// way out, and neither without gamma; fp32 chunks a and b; the row sum over SC lanes
// (SC = 0: one sum per chunk, up to kMaxRowSlots); a dx queue unless dx is written over dy's slot; two
// rstd batches; ReduceSum's work.
struct LongRowsLayout {
    uint64_t rowBytes;     // one row buffer of dy or x
    uint64_t ringSlots;    // slots per tensor in the ring (0: row buffers)
    uint64_t chunkBytes;   // one C-col chunk in the dtype (ring slot, dx queue buffer)
    uint32_t rowBuffers;
    uint64_t gammaBytes, dgammaBytes;
    uint64_t chunkF32Bytes;
    uint64_t sumBytes;
    bool dxQueue;
    uint64_t workBytes;
    bool dres;             // a dres queue of 2 chunks, read in pass 2
    uint64_t partialBytes; // one fp32 partial chunk out (0 when dgamma is whole in UB)
    uint32_t gammaBuffers; // 1: gamma whole; else the chunk buffers gamma streams through
    bool gammaF32;         // 16-bit rows: gamma (where there is one) held in fp32, widened once (GammaInF32)
};
// dgamma in GM: the partial chunks added into it leave through two buffers, so the vector unit fills
// one while the other's copy-out waits behind dx's on MTE3 (with one, the vector unit waits there
// where dx's writes go to HBM).
inline constexpr int32_t kLongRowsPartialOutBuffers = 2;
// A 16-bit row held whole in a row buffer as one chunk: it is widened once and stays in fp32 from pass
// 1 to pass 2, so gamma is widened once per launch and held in fp32 too.
RMSNB_LAYOUT bool WideRow(uint64_t cols, uint32_t s, uint32_t C, uint32_t rowBuffers)
{
    return s < sizeof(float) && rowBuffers > 1 && C >= RowStride(cols, s);
}
// 16-bit gamma is held in fp32, widened once per launch, where the row is one chunk (WideRow), its
// chunks are at least kGammaInF32Cols long, or a bf16 row's dgamma goes through the GM partial (gamma
// takes the UB a whole dgamma would): widened per chunk it costs 2 of a bf16 chunk's 13 vector
// instructions. fp16 forms dy*gamma from the halves instead (1 of its 10), so beside a GM dgamma its
// gamma stays 16-bit and the UB holds longer rows. Shorter chunks are the layouts of rows too long to
// hold gamma in fp32 beside them.
inline constexpr uint32_t kGammaInF32Cols = 4096;
RMSNB_LAYOUT bool GammaInF32(uint64_t cols, uint32_t s, uint32_t C, uint32_t rowBuffers, bool bf16DgammaInGm)
{
    return s < sizeof(float) && (C >= kGammaInF32Cols || WideRow(cols, s, C, rowBuffers) || bf16DgammaInGm);
}
RMSNB_LAYOUT LongRowsLayout LongRows(uint64_t cols, uint32_t s, uint32_t C, uint32_t rowBuffers,
                                                 bool dxQueue, uint32_t SC, uint32_t spareSlots, bool dres, uint32_t g,
                                                 bool dgammaInGm, bool bf16, uint32_t gammaSlots)
{
    const uint64_t S = RowStride(cols, s);
    const uint64_t ring = rowBuffers == 1 ? CeilDiv(cols, C) + spareSlots : 0;
    // No gamma, no dgamma
    const bool viaGm = g != 0 && dgammaInGm;
    const bool gammaF32 = GammaInF32(cols, s, C, rowBuffers, viaGm && bf16);
    const uint64_t gammaElemBytes = g != 0 && gammaF32 ? sizeof(float) : g;
    const bool gammaChunks = g != 0 && gammaSlots > 0;
    return {S * s, ring, uint64_t(C) * s, rowBuffers, gammaChunks ? uint64_t(C) * g : S * gammaElemBytes,
            g == 0 || viaGm ? 0 : S * sizeof(float), uint64_t(C) * sizeof(float),
            (SC == 0 ? kMaxRowSlots : SC) * sizeof(float), dxQueue, ReduceWorkBytes(SC == 0 ? C : SC), dres,
            viaGm ? uint64_t(C) * sizeof(float) : 0, gammaChunks ? gammaSlots : 1u, gammaF32};
}
RMSNB_LAYOUT uint64_t UbBytes(const LongRowsLayout &l)
{
    // dy and x: a ring or row buffers each
    const uint64_t rows = l.ringSlots != 0 ? 2 * l.ringSlots * Blocks(l.chunkBytes)
                                           : 2 * l.rowBuffers * Blocks(l.rowBytes);
    return rows + l.gammaBuffers * Blocks(l.gammaBytes) + Blocks(l.dgammaBytes) + 2 * Blocks(l.chunkF32Bytes) +
           Blocks(l.sumBytes) +
           ((l.dxQueue ? kDoubleBuffer : 0) + (l.dres ? kDoubleBuffer : 0)) * Blocks(l.chunkBytes) +
           kDoubleBuffer * Blocks(kRstdBatchRows * sizeof(float)) + Blocks(l.workBytes) + kBlockBytes +
           kLongRowsPartialOutBuffers * Blocks(l.partialBytes);
}

// Long rows streamed: C-col chunks of dy | x through `streamSlots` slots; gamma whole
// (gammaSlots = 0) or through gammaSlots chunk buffers; dgamma's first DR cols accumulated in UB and
// the rest through two fp32 partial chunks out; 16-bit: dy, x, gamma widened (3 chunks); the
// row sum over SC lanes with ReduceSum's work, its total (a block) and the coefficient (a repeat);
// two rstd batches.
struct StreamedLayout {
    uint64_t slotBytes;    // one dy | x slot
    uint32_t streamSlots;
    uint64_t gammaBytes;   // gamma whole, or one gamma chunk
    uint32_t gammaBuffers; // 1 when whole
    uint64_t dgammaBytes;  // dgamma's UB head
    uint64_t wideBytes;    // 0 for fp32
    uint64_t sumBytes;
    uint64_t workBytes;
    uint64_t partialBytes; // one partial chunk out (0 when dgamma is whole in UB)
    uint64_t dresBytes;    // one dres chunk of the 2 read in pass 2 (0 without dres)
};
RMSNB_LAYOUT StreamedLayout Streamed(uint64_t cols, uint32_t s, uint32_t C, uint32_t streamSlots,
                                                 uint32_t gammaSlots, uint32_t SC, uint64_t DR, bool dres, uint32_t g)
{
    return {2ull * C * s, streamSlots, gammaSlots == 0 ? cols * g : uint64_t(C) * g, gammaSlots == 0 ? 1u : gammaSlots,
            DR * sizeof(float), s == sizeof(float) ? 0 : 3ull * C * sizeof(float), SC * sizeof(float),
            ReduceWorkBytes(SC), DR < cols ? uint64_t(C) * sizeof(float) : 0, dres ? uint64_t(C) * s : 0};
}
RMSNB_LAYOUT uint64_t UbBytes(const StreamedLayout &l)
{
    return l.streamSlots * Blocks(l.slotBytes) + l.gammaBuffers * Blocks(l.gammaBytes) + Blocks(l.dgammaBytes) +
           Blocks(l.wideBytes) + Blocks(l.sumBytes) + Blocks(l.workBytes) + kBlockBytes + kRepeatBytes +
           kDoubleBuffer * Blocks(kRstdBatchRows * sizeof(float)) + kDoubleBuffer * Blocks(l.partialBytes) +
           kDoubleBuffer * Blocks(l.dresBytes);
}

// The dgamma reduction after SyncAll, on the reset pipe: a queue of RC fp32 partials in, one of sums out.
struct DgammaReduceLayout {
    uint64_t chunkBytes;  // RC fp32 elements
};
RMSNB_LAYOUT DgammaReduceLayout DgammaReduce(uint32_t RC) { return {uint64_t(RC) * sizeof(float)}; }
RMSNB_LAYOUT uint64_t UbBytes(const DgammaReduceLayout &l) { return 2 * kDoubleBuffer * Blocks(l.chunkBytes); }

// Each path's layout as its kernel reads it from the tiling (s = sizeof the dtype): the kernels' Init
// and PathUbBytes both take it from here. dx has its own queue unless a ring writes it over dy.
RMSNB_LAYOUT RowsInUbLayout RowsInUb(const RmsNormBackwardTilingData &t, uint32_t s)
{
    return RowsInUb(t.tile_rows, t.row_stride, s, t.has_dres != 0, t.gamma_bytes);
}
RMSNB_LAYOUT SmallColsLayout SmallCols(const RmsNormBackwardTilingData &t)
{
    return SmallCols(t.tile_rows, t.row_stride, t.has_dres != 0, t.gamma_slots);
}
RMSNB_LAYOUT LongRowsLayout LongRows(const RmsNormBackwardTilingData &t, uint32_t s)
{
    return LongRows(t.cols, s, t.chunk_cols, t.row_buffers, !(t.row_buffers == 1 && t.dx_over_dy != 0), t.sum_cols,
                    t.spare_slots, t.has_dres != 0, t.gamma_bytes, t.dgamma_ub_cols < t.cols,
                    t.dtype == uint32_t(RmsNormBackwardDtype::kBfloat16), t.gamma_slots);
}
RMSNB_LAYOUT StreamedLayout Streamed(const RmsNormBackwardTilingData &t, uint32_t s)
{
    return Streamed(t.cols, s, t.chunk_cols, t.stream_slots, t.gamma_slots, t.sum_cols, t.dgamma_ub_cols,
                    t.has_dres != 0, t.gamma_bytes);
}

// The UB a launch holds at its peak, from its tiling alone: its path's buffers, or the dgamma
// reduction's after the reset when row groups need one. The host tiling reports it and refuses a
// tiling that would not fit; the twin measures it.
RMSNB_LAYOUT uint64_t PathUbBytes(RmsNormBackwardPath path, const RmsNormBackwardTilingData &t, uint32_t s)
{
    switch (path) {
        case RmsNormBackwardPath::kRowsInUb:
            return UbBytes(RowsInUb(t, s));
        case RmsNormBackwardPath::kSmallCols:
            return UbBytes(SmallCols(t), s);
        case RmsNormBackwardPath::kLongRows:
            return UbBytes(LongRows(t, s));
        case RmsNormBackwardPath::kLongRowsStreamed:
            return UbBytes(Streamed(t, s));
    }
    return 0;
}
RMSNB_LAYOUT uint64_t LaunchUbBytes(RmsNormBackwardPath path, const RmsNormBackwardTilingData &t, uint32_t s)
{
    const uint64_t main = PathUbBytes(path, t, s);
    const uint64_t reduce = t.gamma_bytes != 0 && t.groups > 1 ? UbBytes(DgammaReduce(t.reduce_chunk)) : 0;
    return main > reduce ? main : reduce;
}

}  // namespace rmsnorm_backward::layout
