// SPDX-License-Identifier: BSD-3-Clause
// The plain tiling of RmsNormBackward: no CANN header, so the CANN TilingFunc
// (op_host/rms_norm_backward_tiling.cpp), the Python extension (op_host/tiling/python/bind_tiling.cpp)
// and the ATB plugin's rules call the same code.
// It validates the inputs and picks the kernel path, its tile sizes, the dgamma row groups, the block
// dim and the workspace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tiling_types.h"

namespace rmsnorm_backward::tiling {

// The name of a tiling key's path ("rows_in_ub", "long_rows", ...), for stats and messages.
const char *TilingPathName(uint32_t tiling_key);

// Fills `out` and returns true, or returns false with the rule the inputs break in `error`.
bool ComputeTiling(const TilingInput &in, TilingResult &out, TilingError &error);

// The outputs a caller allocated (an aclnn caller passes dx and dgamma) against valid inputs: the rule
// they break, or ok() when they fit (dx: shape and dtype of x; dgamma: shape of gamma, float32;
// without gamma an empty [0]).
TilingError CheckOutputs(const TilingInput &in, const std::vector<int64_t> &dx_shape, const std::string &dx_dtype,
                         const std::vector<int64_t> &dgamma_shape, const std::string &dgamma_dtype);

}  // namespace rmsnorm_backward::tiling
