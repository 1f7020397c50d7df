// SPDX-License-Identifier: BSD-3-Clause
// Long rows held whole in UB, one row at a time (op_kernel/rms_norm_backward_long_rows.h): the first
// layout of kLongRowsLayouts that fits. None fits: the row is too long to keep, the streamed path's.
#include "path_tilers.h"

#include <algorithm>
#include <cmath>

#include "../../op_kernel/rms_norm_backward_ub_layout.h"
#include "reference_platform.h"

namespace rmsnorm_backward::tiling {
namespace {

namespace ref = reference_platform;

// Where a layout keeps dgamma: whole in UB (every dtype), or in the group's GM partial, added into chunk
// by chunk, for the rows of one dtype (the layouts differ by what the UB holds instead).
enum class DgammaIn : uint8_t {
    kUb,
    kGmFp32Rows,  // pass 2 adds dy*xhat in fp32 as the row holds it
    kGmFp16Rows,  // gamma stays fp16: fp16 forms dy*gamma from the halves and gains nothing from fp32
    kGmBf16Rows,  // gamma held in fp32 where dgamma was: bf16 has no half-source product
};

// A way to hold the row: in row buffers (the next rows stream in during both passes) or in a ring of
// chunk slots per tensor (the next row streams into the slots pass 2 frees).
struct LongRowsLayoutChoice {
    uint32_t row_buffers;  // 2 or 3 row buffers; 1 = a ring of chunk slots
    uint32_t chunk_cols;   // cols per fp32 work chunk and per ring slot (kWholeRow, kFewestChunks below)
    bool dx_queue;         // dx leaves through its own queue; false: written over dy's ring slot
    uint32_t sum_cols;     // lanes of the row-sum accumulator; 0 = one Mul and ReduceSum per chunk
    uint32_t spare_slots;  // ring slots beyond the row's chunks
    bool whole_chunks;     // only for rows of whole chunks (a short last chunk costs a chunk's issues)
    DgammaIn dgamma;       // whole in UB, or through the group's GM partial chunk by chunk for one dtype's rows
    uint32_t gamma_slots;  // 0: gamma whole in UB; else chunk buffers gamma streams through (fp32 rings)
};

// Best first. After the whole-row buffers (below), the ring with dx over dy's slot and two spare
// slots: the vector unit never waits
// for dx to leave (only for dy's slot refill) and the spare slots keep HBM streaming from pass 1 to
// pass 2. Each vector instruction costs an issue overhead besides its repeats, so long chunks come
// first, then shorter chunks, fewer spare slots and narrower row sums (sum_cols below chunk_cols
// costs one instruction per further sum_cols of a chunk; 0 needs no lane-wise accumulator at all).
// Short chunks make the path vector-bound: each instruction's issue cost nears its repeats, so no
// chunk is shorter than 2048 cols. 16-bit rows widen their inputs in both passes, so a chunk of them
// issues about half again to twice fp32's vector instructions (rms_norm_backward_long_rows.h counts
// them per layout and dtype): they take chunks of at least kMin16BitChunkCols, in row
// buffers or in rings that keep HBM streaming (spare slots), and otherwise the streamed path, whose
// chunks stay longer: on the twin's timeline 2048-col chunks of 16-bit rows model slower than a
// 3072-col ring with spare slots, and slower than streaming from 14000 cols on.
// Three row buffers whose one chunk is the whole row lead: 16-bit rows of 4097-5460 cols issue each
// instruction once per row, not twice, where a 4096-col ring is vector-bound. Above 5460 cols two
// such buffers model slower than the ring.
// A 3072-col ring without the lane-wise sum leaves dres's queue room for 16-bit rows of 12288 cols:
// with dres they read each byte once, where the streamed path reads them again from L2, in the
// streamed path's time. A row with a short last chunk streams faster, so the ring takes rows of
// whole chunks only.
// 16-bit rows past those send dgamma to the group's GM partial chunk by chunk (below), in a ring with
// two spare slots: bf16 rows hold gamma in fp32 where dgamma was, which saves the two instructions a
// chunk that widen it (layout::GammaInF32), in 3072-col chunks up to 12288 cols; fp16 rows keep gamma
// 16-bit and so hold rows up to about 19500 cols, each byte read once, where the streamed path reads
// it twice. Each chunk costs its instructions' issues however short it is, so fp16 rows split in the
// fewest chunks of at least 3072 cols, of equal length where those fit (16384 cols: five of 3328, not
// five of 3072 and one of 1024). fp32 rows gain nothing from it (a 2048-col ring holds their dgamma).
// Where even those do not fit (dres's queue beside 16384 cols, rows past about 16900 cols) fp16 rows
// take a 2432-col ring (seven chunks of a 16384-col row), up to about 19500 cols: its shorter chunks
// cost issues, but the streamed path, reading each byte twice, models far slower (4096 x 18432 fp16:
// 234.6 against 371.1 us), so the 3072-col floor of 16-bit chunks does not hold for these layouts.
// bf16 rows past 12288 cols keep gamma in fp32 in a 2048-col ring, up to 16384 cols: the 3072-col
// floor does not hold for them either (4096 x 16384 bf16: 248.0 us against 289.3 streamed, 16384 rows:
// 1016.3 against 1091.1). With a 16-bit gamma their ring would issue 13 instructions a chunk, not 11,
// and model slower than streaming at 16384 rows. These rings, dgamma in GM, run pass 2 of a row beside
// pass 1 of the next (rms_norm_backward_long_rows.h), which keeps HBM streaming where dx's writes go
// there too.
// Last, for fp32 rows whose dy and x fit UB beside gamma but not beside a whole fp32 dgamma too
// (about 10000 to 13000 cols, fewer with dres): a 1024-col ring whose dgamma goes through the group's
// GM partial, added into it per chunk in pass 2 (SetAtomicAdd: MTE3 writes only, nothing read back).
// Each byte of dy and x is read once, where the streamed path reads it twice and so keeps it in L2,
// which then cannot hold dx: dx's writes went to HBM. These rows keep every core: pass 1 leaves HBM
// idle beyond the spare slots' copies, so
// spare slots come first, then a lane-wise row sum (512 lanes: two MulAddDst a chunk, where a sum per
// chunk costs a Mul and a ReduceSum), which shortens pass 1.
// fp32 rows too long for gamma whole beside them (about 13300 to 17400 cols, from 12289 with dres) take
// gamma chunk by chunk too, through two chunk buffers, in the same 1024-col ring with at least two
// spare slots: pass 2 of a row runs beside pass 1 of the next so one copy of a gamma chunk serves both,
// and the row's bytes are still read once (4096 x 16384 fp32: 426.6 us, against 551.1 us streamed).
// `rmsnorm-backward bench` models each of these shapes (PERFORMANCE.md).
constexpr uint32_t kWholeRow = 0xFFFFFFFFu;  // chunk_cols: the row's stride; sum_cols: the chunk's cols
constexpr uint32_t kFewestChunks = 0xFFFFFFFEu;  // chunk_cols: the row in the fewest of at least kMin16BitChunkCols
constexpr uint32_t kHalfChunk = 0xFFFFFFFDu;     // sum_cols: half the chunk's cols
constexpr LongRowsLayoutChoice kLongRowsLayouts[] = {
    // row_buffers, chunk_cols, dx_queue, sum_cols, spare_slots, whole_chunks, dgamma, gamma_slots
    {kMaxRowBuffers, kWholeRow, true, kWholeRow, 0, false, DgammaIn::kUb, 0},
    {1, 4096, false, 4096, 2, false, DgammaIn::kUb, 0},
    {kMaxRowBuffers, 4096, true, 4096, 0, false, DgammaIn::kUb, 0},
    {2, 4096, true, 4096, 0, false, DgammaIn::kUb, 0},
    {2, 2048, true, 2048, 0, false, DgammaIn::kUb, 0},
    {1, 3072, false, 3072, 3, false, DgammaIn::kGmBf16Rows, 0},
    {1, 3072, false, 3072, 2, false, DgammaIn::kGmBf16Rows, 0},
    {1, 3072, false, 3072, 2, false, DgammaIn::kUb, 0},
    {1, 3072, false, 0, 2, true, DgammaIn::kUb, 0},
    {1, kFewestChunks, false, kWholeRow, 2, false, DgammaIn::kGmFp16Rows, 0},
    {1, kFewestChunks, false, kHalfChunk, 2, false, DgammaIn::kGmFp16Rows, 0},
    {1, 3072, false, 3072, 2, false, DgammaIn::kGmFp16Rows, 0},
    {1, 3072, false, 1536, 2, false, DgammaIn::kGmFp16Rows, 0},
    {1, 2432, false, 2432, 2, false, DgammaIn::kGmFp16Rows, 0},  // below kMin16BitChunkCols (above)
    {1, 2048, false, 2048, 2, false, DgammaIn::kGmBf16Rows, 0},  // so are these
    {1, 2048, false, 1024, 2, false, DgammaIn::kGmBf16Rows, 0},
    {1, 2048, false, 0, 2, false, DgammaIn::kUb, 0},
    {1, 4096, true, 4096, 0, false, DgammaIn::kUb, 0},
    {1, 3072, true, 3072, 1, false, DgammaIn::kUb, 0},
    {1, 3072, true, 3072, 0, false, DgammaIn::kUb, 0},
    {1, 2048, true, 2048, 0, false, DgammaIn::kUb, 0},
    {1, 2048, false, 2048, 0, false, DgammaIn::kUb, 0},
    {1, 2048, false, 1024, 0, false, DgammaIn::kUb, 0},
    {1, 1024, false, 1024, 4, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 512, 4, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 1024, 3, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 512, 3, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 1024, 2, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 512, 2, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 0, 2, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 512, 1, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 0, 1, false, DgammaIn::kGmFp32Rows, 0},
    {1, 1024, false, 1024, 4, false, DgammaIn::kGmFp32Rows, 2},
    {1, 1024, false, 1024, 3, false, DgammaIn::kGmFp32Rows, 2},
    {1, 1024, false, 512, 3, false, DgammaIn::kGmFp32Rows, 2},
    {1, 1024, false, 1024, 2, false, DgammaIn::kGmFp32Rows, 2},
    {1, 1024, false, 512, 2, false, DgammaIn::kGmFp32Rows, 2},
};

// Row buffers are the buffers of two VECIN queues, each queued or freed one holding an event id of
// the TPipe; the ring's slots are plain buffers ordered by flags.
static_assert(2 * kMaxRowBuffers <= layout::kEventIdsPerEvent, "row buffers of dy and x must fit the event ids");

// gamma's chunk buffers are the buffers of one double-buffered VECIN queue (ChunkGamma).
constexpr bool GammaSlotsFitTheQueue()
{
    for (const LongRowsLayoutChoice &c : kLongRowsLayouts) {
        if (c.gamma_slots > uint32_t(layout::kDoubleBuffer)) {
            return false;
        }
    }
    return true;
}
static_assert(GammaSlotsFitTheQueue(), "a layout's gamma chunk buffers must fit ChunkGamma's queue (two)");

// A ring needs at least two chunks per row (one chunk holds only whole rows, which the row buffers do
// better) and at most kMaxRowSlots slots.
constexpr uint32_t kMin16BitChunkCols = 3072;
constexpr uint32_t kMin16BitSpareSlots = 2;
constexpr uint32_t kGammaChunksSpareSlots = 2;

// kFewestChunks: chunks of a multiple of kFewestChunksAlign cols (two repeats of fp32, so half a
// chunk is whole repeats too).
constexpr uint32_t kFewestChunksAlign = 128;

// The choice with kWholeRow, kFewestChunks and kHalfChunk resolved for this shape.
LongRowsLayoutChoice ForShape(LongRowsLayoutChoice c, const TilingShape &shape)
{
    if (c.chunk_cols == kWholeRow) {
        c.chunk_cols = uint32_t(layout::RowStride(shape.cols, shape.elem_bytes));
    } else if (c.chunk_cols == kFewestChunks) {
        const uint64_t chunks = std::max<uint64_t>(2, shape.cols / kMin16BitChunkCols);
        c.chunk_cols = uint32_t(layout::RoundUp(layout::CeilDiv(shape.cols, chunks), kFewestChunksAlign));
    }
    if (c.sum_cols == kWholeRow) {
        c.sum_cols = c.chunk_cols;
    } else if (c.sum_cols == kHalfChunk) {
        c.sum_cols = c.chunk_cols / 2;
    }
    return c;
}

// The UB layout of a choice for this shape (the kernel reads the same one from its tiling).
layout::LongRowsLayout LayoutOf(const LongRowsLayoutChoice &c, const TilingShape &shape)
{
    return layout::LongRows(shape.cols, shape.elem_bytes, c.chunk_cols, c.row_buffers, c.dx_queue, c.sum_cols,
                            c.spare_slots, shape.dres, shape.gamma_bytes, c.dgamma != DgammaIn::kUb,
                            shape.dtype == RmsNormBackwardDtype::kBfloat16, c.gamma_slots);
}

// The GM-partial layouts of this dtype's rows (in a ring only).
DgammaIn GmRowsOf(RmsNormBackwardDtype dtype)
{
    return dtype == RmsNormBackwardDtype::kFloat32   ? DgammaIn::kGmFp32Rows
           : dtype == RmsNormBackwardDtype::kFloat16 ? DgammaIn::kGmFp16Rows
                                                     : DgammaIn::kGmBf16Rows;
}

bool Fits(const LongRowsLayoutChoice &c, const TilingShape &shape)
{
    // (the 16-bit layouts with dgamma in GM are exempt from the chunk floor: above)
    if (shape.elem_bytes < sizeof(float) &&
        ((c.chunk_cols < kMin16BitChunkCols && c.dgamma == DgammaIn::kUb) ||
         (c.row_buffers == 1 && c.spare_slots < kMin16BitSpareSlots))) {
        return false;
    }
    if (c.whole_chunks && shape.cols % c.chunk_cols != 0) {
        return false;
    }
    if (c.dgamma != DgammaIn::kUb && (c.row_buffers != 1 || c.dgamma != GmRowsOf(shape.dtype))) {
        return false;
    }
    // gamma through chunk buffers: fp32 rings only, with two spare slots. Pass 1 of the next row takes
    // its chunk c right after pass 2 of this row's chunk c (they share gamma's chunk); with one spare
    // slot that chunk lands in the slot pass 2 freed one step before, and the vector unit waits for
    // each landing (4096 x 18432 fp32: 765 us, against 674 us streamed).
    if (c.gamma_slots > 0 && (c.dgamma != DgammaIn::kGmFp32Rows || c.spare_slots < kGammaChunksSpareSlots)) {
        return false;
    }
    if (c.row_buffers == 1 && (layout::CeilDiv(shape.cols, c.chunk_cols) + c.spare_slots > kMaxRowSlots ||
                               shape.cols <= c.chunk_cols)) {
        return false;
    }
    return layout::UbBytes(LayoutOf(c, shape)) <= shape.ub_bytes;
}

// The first layout that fits; false when none does.
bool Choose(const TilingShape &shape, LongRowsLayoutChoice &chosen)
{
    for (const LongRowsLayoutChoice &choice : kLongRowsLayouts) {
        chosen = ForShape(choice, shape);
        if (Fits(chosen, shape)) return true;
    }
    return false;
}

// fp32 rows keep their cores waiting on HBM (a chunk's 6 vector instructions against a 16-bit chunk's
// 11 to 13, for twice the bytes), so a launch takes the busiest group's rows at its core's share of
// HBM's rate. Cores beyond those whose GM-to-UB links fill HBM add no rate, and where the groups do
// not divide the rows the last wave of rows runs on some cores only, below HBM's rate. So fp32 rows
// take, among the group counts from the saturating one up to the shape's, the one whose busiest group
// keeps HBM busiest: the fewest rows per group x max(groups, saturating count), the most groups on a
// tie. 4096 rows: 32 groups of 128, not 48 of 85 or 86 (a 86th row on 16 cores). Depends on the shape
// only, as the groups must. 16-bit rows are nearer the vector unit's bound and keep every core.
uint32_t HbmBalancedGroups(uint64_t rows, uint32_t groups)
{
    const uint32_t saturating = uint32_t(std::ceil(ref::kTilingHbmGbps / (ref::kGmToUbBytesPerCycle * ref::kTilingClockGhz)));
    uint32_t best = groups;
    uint64_t bestCost = ~0ull;
    for (uint32_t g = groups; g >= saturating && g > 0; --g) {
        const uint64_t cost = (rows + g - 1) / g * std::max(g, saturating);
        if (cost < bestCost) {
            best = g;
            bestCost = cost;
        }
    }
    return best;
}

class LongRows final : public PathTiler {
public:
    RmsNormBackwardPath Path() const override { return RmsNormBackwardPath::kLongRows; }
    bool IsCapable(const TilingShape &shape) const override
    {
        LongRowsLayoutChoice c;
        return Choose(shape, c);
    }
    void DoTiling(const TilingShape &shape, RmsNormBackwardTilingData &t) const override
    {
        LongRowsLayoutChoice c;
        Choose(shape, c);
        t.tile_rows = 1;
        t.chunk_cols = c.chunk_cols;
        t.sum_cols = c.sum_cols;
        t.spare_slots = c.spare_slots;
        t.gamma_slots = shape.gamma_bytes != 0 ? c.gamma_slots : 0;
        t.row_buffers = c.row_buffers;
        t.dx_over_dy = c.dx_queue ? 0 : 1;
        // (the layout decides: rows without gamma have no dgamma, so every layout is a plain ring for them)
        const bool dgammaInGm = LayoutOf(c, shape).partialBytes > 0;
        t.dgamma_ub_cols = dgammaInGm ? 0 : shape.cols;
        if (shape.elem_bytes == sizeof(float) && !dgammaInGm) {
            t.groups = HbmBalancedGroups(shape.rows, t.groups);
        }
    }
};

}  // namespace

const PathTiler &LongRowsTiler()
{
    static const LongRows tiler;
    return tiler;
}

}  // namespace rmsnorm_backward::tiling
