// SPDX-License-Identifier: BSD-3-Clause
// The operator's rules on its inputs, checked before any tiling (input_rules.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "tiling_types.h"

namespace rmsnorm_backward::tiling {

// The dtype code and element size of a NumPy dtype name; false for a dtype the operator does not take.
bool DtypeCode(const std::string &name, RmsNormBackwardDtype &code, uint32_t &size);

// ok() when the inputs are valid (rows and cols set), else the first rule they break.
TilingError Validate(const TilingInput &in, uint64_t &rows, uint64_t &cols);

// The normalised dims of a launch without gamma: x's trailing dims that rstd (x.shape[:-k] + (1,)*k
// or x.shape[:-k]) does not have, the smallest such k; "" on success, else the rule rstd breaks.
std::string RowDimsWithoutGamma(const std::vector<int64_t> &x, const std::vector<int64_t> &rstd,
                                std::vector<int64_t> &row);

}  // namespace rmsnorm_backward::tiling
