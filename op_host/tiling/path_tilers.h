// SPDX-License-Identifier: BSD-3-Clause
// One tiler per kernel path, in the shape of ops-nn's tiling classes: IsCapable says whether the path
// can take the shape at all, DoTiling fills the path's fields of the tiling data. ComputeTiling
// (rms_norm_backward_tiling.cpp) asks them in one ordered list and takes the first capable one;
// the fields every path shares (rows, cols, row groups), the key, the block dim and the workspace are
// set there, the same way for every path.
#pragma once
#include <cstdint>

#include "../../op_kernel/rms_norm_backward_tiling_data.h"

namespace rmsnorm_backward::tiling {

// The shape as every tiler sees it.
struct TilingShape {
    uint64_t rows = 0;
    uint64_t cols = 0;
    RmsNormBackwardDtype dtype{};
    uint32_t elem_bytes = 0;  // sizeof the dtype of dy, x, gamma and dx
    uint64_t row_stride = 0;  // cols rounded up to whole 32-byte blocks of the dtype
    uint64_t ub_bytes = 0;    // the Unified Buffer a kernel may use (the platform's, less the reserve)
    bool dres = false;        // dres is read and added to dx (its buffers count in every layout)
    uint32_t gamma_bytes = 0; // sizeof an element of gamma (the dtype's, or 4 for float32 gamma); 0: no gamma
};

class PathTiler {
public:
    virtual ~PathTiler() = default;
    virtual RmsNormBackwardPath Path() const = 0;
    virtual bool IsCapable(const TilingShape &shape) const = 0;
    // Only after IsCapable(shape): the path's own fields of `t` (the shared ones are set already).
    virtual void DoTiling(const TilingShape &shape, RmsNormBackwardTilingData &t) const = 0;
};

// The tilers, one per path; ComputeTiling holds them in the order it asks them.
const PathTiler &SmallColsTiler();
const PathTiler &RowsInUbTiler();
const PathTiler &LongRowsTiler();
const PathTiler &LongRowsStreamedTiler();

}  // namespace rmsnorm_backward::tiling
