// SPDX-License-Identifier: BSD-3-Clause
// The two paths that hold whole rows in UB: small cols (many rows packed per vector instruction) and
// rows in UB (a tile of rows: fp32 computed row by row, 16-bit a tile at a time). Both pick the
// largest tile that fits.
#include "path_tilers.h"

#include <algorithm>

#include "../../op_kernel/rms_norm_backward_ub_layout.h"
#include "reference_platform.h"

namespace rmsnorm_backward::tiling {
namespace {

// Small cols takes rows of at most this many UB elements where 8 rows fit (on 192 KiB: up to 816
// 16-bit or 576 fp32 cols). Packed rows beat row by row there: row by row, each instruction's issue
// cost dominates (16384 x 256 fp16 models well over twice as slow). The cap keeps a row's repeat stride
// (S/8 blocks) within the instruction's 8-bit field.
constexpr uint64_t kSmallColsMaxStride = 1024;
// Tiles are whole multiples of 8 rows (a block of per-row fp32 scalars) below the 255-repeat limit
// (one repeat per row).
constexpr uint32_t kTileRowStep = 8;
constexpr uint32_t kMaxTileRows = 248;
// One pass: where the rows are already split into groups (so the SyncAll and the partials' reduction
// are paid anyway) and every group fits one tile, a core's time is its fixed costs (copy set-ups,
// instruction issues) and a tile's worth of vector repeats, and more groups pay those in parallel:
// the rows are spread over up to this many groups (the supported SoCs' largest core count), at least a
// tile step each. The partials this adds are a few cycles of HBM (32x32x48 fp16: 48 groups of 22 rows
// model faster than 12 of 86). Depends on the shape only, as the groups must.
constexpr uint64_t kOnePassGroups = reference_platform::kVectorCores;

class SmallCols final : public PathTiler {
public:
    RmsNormBackwardPath Path() const override { return RmsNormBackwardPath::kSmallCols; }
    bool IsCapable(const TilingShape &shape) const override
    {
        return shape.row_stride <= kSmallColsMaxStride && Bytes(kTileRowStep, shape) <= shape.ub_bytes;
    }
    void DoTiling(const TilingShape &shape, RmsNormBackwardTilingData &t) const override
    {
        uint32_t rows = kMaxTileRows;
        while (rows > kTileRowStep && Bytes(rows, shape) > shape.ub_bytes) rows -= kTileRowStep;
        t.tile_rows = rows;
        // Rows of two or more repeats scale by gamma one instruction per 64-lane column chunk; gamma
        // over the whole tile takes one, where it fits beside the tile chosen without it.
        if (shape.row_stride >= 2 * layout::kFloatsPerRepeat && Bytes(rows, shape, rows) <= shape.ub_bytes) {
            t.gamma_slots = rows;
        }
        const uint64_t perGroup = (shape.rows + t.groups - 1) / t.groups;
        if (t.groups > 1 && perGroup <= rows) {
            const uint64_t spread = std::min(kOnePassGroups, (shape.rows + kTileRowStep - 1) / kTileRowStep);
            t.groups = uint32_t(std::max<uint64_t>(t.groups, spread));
        }
    }

private:
    static uint64_t Bytes(uint32_t rows, const TilingShape &shape, uint32_t gammaRows = 0)
    {
        return layout::UbBytes(layout::SmallCols(rows, shape.row_stride, shape.dres, gammaRows), shape.elem_bytes);
    }
};

// At least two rows per tile, or the long-rows path (one row at a time, the next streaming in) is better.
constexpr uint32_t kRowsInUbMinRows = 2;
// 16-bit rows are computed a tile at a time, in fp32 tiles, which leave room for two or three rows as
// rows near this many elements; past it the long-rows path models faster (16384 x 2560 fp16: 128.9
// us against 130.8 a tile at a time), up to it rows in UB (16384 x 2432 bf16: 125.3 against 125.6).
constexpr uint32_t kRowsInUb16BitMaxStride = 2432;

class RowsInUb final : public PathTiler {
public:
    RmsNormBackwardPath Path() const override { return RmsNormBackwardPath::kRowsInUb; }
    bool IsCapable(const TilingShape &shape) const override
    {
        return TileRows(shape) >= kRowsInUbMinRows &&
               (shape.elem_bytes == sizeof(float) || shape.row_stride <= kRowsInUb16BitMaxStride);
    }
    void DoTiling(const TilingShape &shape, RmsNormBackwardTilingData &t) const override { t.tile_rows = TileRows(shape); }

private:
    static uint32_t TileRows(const TilingShape &shape)
    {
        uint32_t rows = 0;
        while (rows < kMaxTileRows &&
               layout::UbBytes(layout::RowsInUb(rows + 1, shape.row_stride, shape.elem_bytes, shape.dres, shape.gamma_bytes)) <=
                   shape.ub_bytes) {
            ++rows;
        }
        return rows;
    }
};

}  // namespace

const PathTiler &SmallColsTiler()
{
    static const SmallCols tiler;
    return tiler;
}

const PathTiler &RowsInUbTiler()
{
    static const RowsInUb tiler;
    return tiler;
}

}  // namespace rmsnorm_backward::tiling
