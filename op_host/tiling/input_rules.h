// The operator's rules on its inputs, checked before any tiling (input_rules.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "rms_norm_backward_tiling.h"

namespace rmsnorm_backward::tiling {

// The dtype code and element size of a NumPy dtype name; false for a dtype the operator does not take.
bool DtypeCode(const std::string &name, RmsNormBackwardDtype &code, uint32_t &size);

// ok() when the inputs are valid (rows and cols set), else the first rule they break.
TilingError Validate(const TilingInput &in, uint64_t &rows, uint64_t &cols);

}  // namespace rmsnorm_backward::tiling
