// SPDX-License-Identifier: BSD-3-Clause
// The rules of the ATB operation RmsNormBackwardOperation in plain C++ (no ACL or ATB header), so
// they are tested on any CPU. The tensor rules themselves are the project's tiling validation
// (op_host/tiling); this layer adds what only ATB asks: tensor counts, formats, the outputs a
// caller passes, the reserved parameter bytes, and which ATB status class a broken rule belongs to.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rms_norm_backward_atb_interface.h"

namespace rmsnorm_backward::atb {

// The class of a broken rule; rms_norm_backward_operation.cpp maps each to an atb::ErrorType.
enum class Fault { kNone, kParam, kInputCount, kOutputCount, kDtype, kFormat, kShape };

struct TensorSpec {
    std::string dtype;   // NumPy spelling (float16, float32, bfloat16, int8, ...)
    std::string format;  // ND, NCHW, FRACTAL_NZ, ...
    std::vector<int64_t> shape;

    bool operator==(const TensorSpec &other) const
    {
        return dtype == other.dtype && format == other.format && shape == other.shape;
    }
};

struct Verdict {
    Fault fault = Fault::kNone;
    std::string message;  // one sentence naming the tensor or parameter and the rule

    bool ok() const { return fault == Fault::kNone; }
};

// The reserved bytes of RmsNormBackwardParam must stay zero, so that a later meaning for them cannot
// be mistaken for today's behaviour.
Verdict CheckReserved(const uint8_t *rsv, size_t size);

// Checks the inputs (dy, x, rstd, gamma) and gives the outputs' descriptions (dx, dgamma).
Verdict InferOutputs(const std::vector<TensorSpec> &inputs, std::vector<TensorSpec> &outputs);

// Checks the inputs as InferOutputs does, then that the outputs a caller passes are the ones it gives.
Verdict CheckOutputs(const std::vector<TensorSpec> &inputs, const std::vector<TensorSpec> &outputs);

// "[32, 64, 128]"
std::string ShapeText(const std::vector<int64_t> &shape);

}  // namespace rmsnorm_backward::atb
