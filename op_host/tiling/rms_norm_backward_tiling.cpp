// SPDX-License-Identifier: BSD-3-Clause
// The tiling of RmsNormBackward (rms_norm_backward_tiling.h): validates the inputs, sets the fields
// every path shares, asks the path tilers (path_tilers.h) in order, and derives the key, block dim
// and workspace from what they chose.
#include "rms_norm_backward_tiling.h"

#include <algorithm>

#include "../../op_kernel/rms_norm_backward_ub_layout.h"
#include "input_rules.h"
#include "path_tilers.h"
#include "reference_platform.h"

namespace rmsnorm_backward::tiling {
namespace {

// Best first; the last one takes every shape.
const PathTiler *const kPathOrder[] = {&SmallColsTiler(), &RowsInUbTiler(), &LongRowsTiler(), &LongRowsStreamedTiler()};

// Kept free of the platform's UB by the toolchain.
constexpr uint64_t kUbReservedBytes = reference_platform::kUbReservedBytes;
constexpr uint32_t kReduceChunk = 4096;  // fp32 elements per step of the dgamma reduction
// dgamma row groups: each group beyond one costs about cols * (4 + 4 + sizeof(T)) GM bytes (its fp32
// partial written, read back by the reduction, and gamma read again). Allow that overhead up to 2 % of
// the minimum traffic, so reading dy and x once keeps the whole launch within 1.02 x the minimum, and
// never more groups than the largest core count of the supported SoCs. The count depends on the shape
// only: the same input gives the same partials, hence the same dgamma bits, for every block dim.
constexpr double kGroupTrafficShare = 0.02;
constexpr uint64_t kMaxGroups = reference_platform::kVectorCores;

// Each input read once, each output written once (gamma and dgamma only when there is a gamma, dres
// when there is one).
uint64_t MinBytes(const TilingShape &shape, bool hasGamma)
{
    const uint64_t s = shape.elem_bytes;
    return shape.rows * shape.cols * (shape.dres ? 4 : 3) * s + shape.rows * sizeof(float) +
           (hasGamma ? shape.cols * shape.gamma_bytes + shape.cols * sizeof(float) : 0);
}

// Without gamma a group costs nothing beyond its rows (no partial), so there are as many as cores
// could take.
uint32_t Groups(const TilingShape &shape, uint64_t minBytes, bool hasGamma)
{
    if (!hasGamma) {
        return uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(shape.rows, kMaxGroups)));
    }
    const uint64_t s = shape.elem_bytes;
    const double extra = kGroupTrafficShare * double(minBytes) + double(shape.cols * s);
    const uint64_t groups = uint64_t(extra / double(shape.cols * (2 * sizeof(float) + s)));
    return uint32_t(std::max<uint64_t>(1, std::min<uint64_t>({groups, shape.rows, kMaxGroups})));
}

// The fields every path reads.
RmsNormBackwardTilingData SharedFields(const TilingShape &shape, uint32_t groups, const TilingInput &in)
{
    RmsNormBackwardTilingData t{};
    t.rows = shape.rows;
    t.cols = uint32_t(shape.cols);
    t.dtype = uint32_t(shape.dtype);
    t.row_stride = uint32_t(shape.row_stride);
    t.inv_cols = float(1.0 / double(shape.cols));
    t.groups = groups;
    t.partial_stride = uint32_t(layout::RoundUp(shape.cols, layout::kFloatsPerBlock));
    t.reduce_chunk = kReduceChunk;
    t.gamma_offset = in.gamma_offset;
    t.gamma_bytes = uint16_t(shape.gamma_bytes);
    t.has_dres = in.has_dres ? 1 : 0;
    return t;
}

const PathTiler &FirstCapable(const TilingShape &shape)
{
    for (const PathTiler *tiler : kPathOrder) {
        if (tiler->IsCapable(shape)) return *tiler;
    }
    return *kPathOrder[std::size(kPathOrder) - 1];
}

}  // namespace

const char *TilingPathName(uint32_t tiling_key)
{
    return PathName(PathOf(static_cast<RmsNormBackwardTilingKey>(tiling_key)));
}

bool ComputeTiling(const TilingInput &in, TilingResult &out, TilingError &error)
{
    TilingShape shape;
    error = Validate(in, shape.rows, shape.cols);
    if (!error.ok()) return false;
    const PlatformFacts &platform = in.platform;
    if (in.block_dim_cap > platform.vector_cores) {
        error = {TilingFault::kAttr, "block_dim", "block_dim must be at most the " + std::to_string(platform.vector_cores) +
                                                      " vector cores of " + platform.soc + " (got " +
                                                      std::to_string(in.block_dim_cap) + ")."};
        return false;
    }
    if (platform.ub_bytes <= kUbReservedBytes) {
        error = {TilingFault::kPlatform, "soc", "the platform reports " + std::to_string(platform.ub_bytes) +
                                                    " bytes of UB for " + platform.soc +
                                                    ", not more than the toolchain's reserve of " +
                                                    std::to_string(kUbReservedBytes) + "."};
        return false;
    }
    DtypeCode(in.x_dtype, shape.dtype, shape.elem_bytes);
    shape.row_stride = layout::RowStride(shape.cols, shape.elem_bytes);
    shape.ub_bytes = platform.ub_bytes - kUbReservedBytes;
    shape.dres = in.has_dres;
    shape.gamma_bytes = !in.has_gamma ? 0 : in.gamma_dtype == in.x_dtype ? shape.elem_bytes : uint32_t(sizeof(float));

    out.min_bytes = MinBytes(shape, in.has_gamma);
    RmsNormBackwardTilingData t = SharedFields(shape, Groups(shape, out.min_bytes, in.has_gamma), in);
    const PathTiler &tiler = FirstCapable(shape);
    tiler.DoTiling(shape, t);

    out.ub_bytes = layout::LaunchUbBytes(tiler.Path(), t, shape.elem_bytes);
    if (out.ub_bytes > shape.ub_bytes) {  // a tiler's own sum disagrees with the layout: never launch it
        error = {TilingFault::kPlatform, "", std::string("internal error: the ") + PathName(tiler.Path()) +
                                                 " tiling needs " + std::to_string(out.ub_bytes) +
                                                 " bytes of UB, more than the " + std::to_string(shape.ub_bytes) +
                                                 " the platform leaves; please report the shape."};
        return false;
    }
    out.data = t;
    out.tiling_key = uint32_t(MakeKey(tiler.Path(), shape.dtype));
    out.block_dim = std::min(t.groups, platform.vector_cores);
    if (in.block_dim_cap != 0) out.block_dim = std::min(out.block_dim, in.block_dim_cap);
    out.user_workspace_bytes = in.has_gamma && t.groups > 1 ? uint64_t(t.groups) * t.partial_stride * sizeof(float) : 0;
    out.workspace_bytes = platform.sys_workspace_bytes + out.user_workspace_bytes;
    return true;
}

}  // namespace rmsnorm_backward::tiling
