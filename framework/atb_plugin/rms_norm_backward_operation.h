// SPDX-License-Identifier: BSD-3-Clause
// RmsNormBackward as an ATB operation (ATB's RmsNormBackwardOperation): inputs dy, x, rstd,
// gamma and outputs dx, dgamma in atb::VariantPack order; Setup returns the device workspace that
// aclnnRmsNormBackward of the installed operator package asks for, Execute launches it on the
// operation's execute stream of the context. Release it with atb::DestroyOperation.
#pragma once
#include <cstdint>

#include "atb/operation.h"

namespace rmsnorm_backward::atb {

// The layout of ATB's atb::train::RmsNormBackwardParam: 8 reserved bytes, which must be zero.
struct RmsNormBackwardParam {
    uint8_t rsv[8] = {0};
};

// Creates the operation in *operation; a broken rule returns its atb::ErrorType and logs one line.
::atb::Status CreateOperation(const RmsNormBackwardParam &param, ::atb::Operation **operation);

}  // namespace rmsnorm_backward::atb
