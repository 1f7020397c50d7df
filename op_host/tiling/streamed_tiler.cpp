// SPDX-License-Identifier: BSD-3-Clause
// Long rows streamed (op_kernel/rms_norm_backward_long_rows_streamed.h): rows too long to hold whole.
// C-col chunks of dy | x go through stream slots (read in pass 1 and again in pass 2), gamma stays
// whole or comes through chunk buffers, dgamma's leading cols accumulate in UB. This path takes every
// shape, so it is the last tiler asked.
#include <algorithm>

#include "path_tilers.h"
#include "reference_platform.h"

#include "../../op_kernel/rms_norm_backward_ub_layout.h"

namespace rmsnorm_backward::tiling {
namespace {

struct StreamedChoice {
    uint32_t chunk_cols;      // C
    uint32_t stream_slots;    // dy | x slots
    uint32_t gamma_slots;     // 0: gamma whole in UB
    uint32_t sum_cols;        // row-sum lanes
    uint64_t dgamma_ub_cols;  // dgamma's cols held in UB
};

constexpr uint32_t kMinChunkCols = 512;   // shorter chunks lose more to each copy's set-up than they gain
constexpr uint32_t kMaxChunkCols = 4096;  // the fewest chunks tried: cols / 4096
constexpr uint32_t kMinSumCols = 256;     // row-sum lanes at least (1 KiB); up to a chunk where UB is left
constexpr uint32_t kStreamedGammaSlots = 2;

// The cost model the chunk count is chosen by (modelled cycles per row of one core, PERFORMANCE.md):
// the core's HBM share (dy, x read, dx written) against MTE2's own work (dy and x from HBM, again
// from L2, gamma chunks from L2, a set-up per copy). Its constants are the tiling's own: they rank
// layouts that all work, so they steer speed, never correctness. The rates are Ascend910B2's platform
// figures for every SoC (reference_platform.h), so the tiling (and with it every bit of dx) is the
// same on all of them.
namespace ref = reference_platform;
constexpr double kCopySetupCycles = 64;      // MTE2's fixed cost per copy, the tiling's estimate
// A thin stream loses more to latencies than the rates show: 18 % with 2 slots, 3.5 % with 3 unless
// they hold at least kHeldShareFor3Slots of the row (fitted on the twin's timeline to fp32 rows of
// 12288 and 16384 cols).
constexpr double kThinFactor2Slots = 1.18;
constexpr double kThinFactor3Slots = 1.035;
constexpr double kHeldShareFor3Slots = 0.75;
// 16-bit rows spend twice the vector time per byte (widening in both passes), so a stream of 3 slots
// falls behind whatever share of the row it holds: 8 % on the twin's timeline (4096 x 16384 fp16).
constexpr double kThinFactor3Slots16Bit = 1.08;
// With dres, pass 2 of a 16-bit row also waits for dres's chunk, which the cost model above, built
// without dres, cannot see: 3 slots model slower than 5 (4096 x 16384 fp16, and 15360-32768 cols
// likewise). Such rows take at least this many slots wherever a chunk count gives them, when their
// row groups fill every core (with fewer groups than cores, 3 slots stay faster).
constexpr uint32_t kMinSlots16BitDres = 4;

uint64_t Bytes(const StreamedChoice &c, const TilingShape &shape)
{
    return layout::UbBytes(layout::Streamed(shape.cols, shape.elem_bytes, c.chunk_cols, c.stream_slots, c.gamma_slots,
                                            c.sum_cols, c.dgamma_ub_cols, shape.dres, shape.gamma_bytes));
}

double Cost(const StreamedChoice &c, const TilingShape &shape)
{
    const double share = ref::kTilingHbmGbps / ref::kTilingClockGhz / ref::kVectorCores, l2 = ref::kL2BytesPerCycle;
    const double chunks = double((shape.cols + c.chunk_cols - 1) / c.chunk_cols);
    const double row = double(shape.cols) * shape.elem_bytes;
    const double gamma = c.gamma_slots == 0 ? 0 : 2 * (kCopySetupCycles * chunks + row / l2);
    const double mte2 = 2 * row / share + 2 * row / l2 + 4 * kCopySetupCycles * chunks + gamma;
    const double hbm = 3 * row / share;
    const double held = double(c.stream_slots) * c.chunk_cols / double(shape.cols);
    const double thin = c.stream_slots == 2                                          ? kThinFactor2Slots
                        : c.stream_slots == 3 && shape.elem_bytes < sizeof(float)     ? kThinFactor3Slots16Bit
                        : c.stream_slots == 3 && held < kHeldShareFor3Slots           ? kThinFactor3Slots
                                                                                      : 1.0;
    return std::max(mte2, hbm * thin);
}

// As many stream slots as fit (each is a VECIN queue buffer: one event id, beside the gamma slots'
// and dres's two).
StreamedChoice WithSlots(StreamedChoice c, const TilingShape &shape)
{
    for (;;) {
        StreamedChoice more = c;
        ++more.stream_slots;
        const uint32_t dresSlots = shape.dres ? uint32_t(layout::kDoubleBuffer) : 0;
        if (c.stream_slots >= kMaxRowSlots || more.stream_slots + c.gamma_slots + dresSlots > layout::kEventIdsPerEvent ||
            Bytes(more, shape) > shape.ub_bytes) {
            return c;
        }
        c = more;
    }
}

// Chunks as even as 64-lane repeats allow (a short last chunk costs a copy set-up for little data),
// as many slots as fit (at least minSlots), the cheapest count of chunks; gamma whole when it fits
// beside dgamma (streamed gamma is read again from L2 by every row). False when none has minSlots.
bool Cheapest(const TilingShape &shape, uint32_t minSlots, StreamedChoice &best)
{
    for (uint32_t gammaSlots : {0u, kStreamedGammaSlots}) {
        bool found = false;
        double bestCost = 0;
        for (uint64_t chunks = layout::CeilDiv(shape.cols, kMaxChunkCols);; ++chunks) {
            const uint32_t C = uint32_t(layout::RoundUp(layout::CeilDiv(shape.cols, chunks), layout::kFloatsPerRepeat));
            if (C < kMinChunkCols) break;
            const StreamedChoice c = WithSlots({C, 0, gammaSlots, kMinSumCols, shape.cols}, shape);
            if (c.stream_slots < minSlots) continue;
            const double cost = Cost(c, shape);
            if (!found || cost < bestCost) {
                found = true;
                best = c;
                bestCost = cost;
            }
        }
        if (found) return true;
    }
    return false;
}

// Not even gamma and dgamma fit: the fewest buffers, and dgamma's cols beyond what UB holds go
// through the group's GM partial.
StreamedChoice Smallest(const TilingShape &shape)
{
    StreamedChoice c{1024, 2, kStreamedGammaSlots, kMinSumCols, 0};
    c.dgamma_ub_cols = (shape.ub_bytes - Bytes(c, shape)) / sizeof(float) / c.chunk_cols * c.chunk_cols;
    return c;
}

class LongRowsStreamed final : public PathTiler {
public:
    RmsNormBackwardPath Path() const override { return RmsNormBackwardPath::kLongRowsStreamed; }
    bool IsCapable(const TilingShape &) const override { return true; }
    void DoTiling(const TilingShape &shape, RmsNormBackwardTilingData &t) const override
    {
        StreamedChoice best{};
        // (on fewer cores a core's HBM share is wider, the vector unit sets the pace, and fewer chunks win)
        const bool dres16 = shape.dres && shape.elem_bytes < sizeof(float) && t.groups >= ref::kVectorCores;
        if (!(dres16 && Cheapest(shape, kMinSlots16BitDres, best)) && !Cheapest(shape, 2, best)) {
            best = Smallest(shape);
        }
        for (uint32_t sumCols : {best.chunk_cols, 2048u, 1024u, 512u}) {  // fewer row-sum instructions where UB is left
            StreamedChoice wider = best;
            wider.sum_cols = std::min(sumCols, best.chunk_cols);
            if (wider.sum_cols > best.sum_cols && Bytes(wider, shape) <= shape.ub_bytes) {
                best = wider;
                break;
            }
        }
        t.tile_rows = 1;
        t.chunk_cols = best.chunk_cols;
        t.stream_slots = best.stream_slots;
        t.gamma_slots = best.gamma_slots;
        t.sum_cols = best.sum_cols;
        t.dgamma_ub_cols = uint32_t(best.dgamma_ub_cols);
    }
};

}  // namespace

const PathTiler &LongRowsStreamedTiler()
{
    static const LongRowsStreamed tiler;
    return tiler;
}

}  // namespace rmsnorm_backward::tiling
