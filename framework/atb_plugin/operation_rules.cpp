// SPDX-License-Identifier: BSD-3-Clause
// See operation_rules.h. The tensor rules are asked of ComputeTiling, never restated here.
#include "operation_rules.h"

#include "../../op_host/tiling/reference_platform.h"
#include "../../op_host/tiling/rms_norm_backward_tiling.h"

namespace rmsnorm_backward::atb {
namespace {

static_assert(kOutputs[0].shape_of >= 0 && kOutputs[1].shape_of >= 0,
              "every output of the operation takes the shape of an input");

std::string Join(const char *const *names, uint32_t size, const char *separator)
{
    std::string text;
    for (uint32_t i = 0; i < size; ++i) {
        text += std::string(i ? separator : "") + names[i];
    }
    return text;
}

std::string Count(uint32_t n, const char *const *names) { return std::to_string(n) + " (" + Join(names, n, ", ") + ")"; }

Verdict Broken(Fault fault, std::string message) { return Verdict{fault, std::move(message)}; }

bool KnownFormat(const std::string &format)
{
    for (const char *f : kFormats) {
        if (format == f) return true;
    }
    return false;
}

// The rules asked here are the tensors' (shapes, dtypes), which hold on every SoC; the tiling still
// needs a platform, so it gets the reference platform's (reference_platform.h). The launch tiles with the
// running platform's facts (CANN's TilingFunc behind aclnn).
rmsnorm_backward::tiling::PlatformFacts RulesPlatform()
{
    rmsnorm_backward::tiling::PlatformFacts p;
    p.soc = "ascend910b";
    p.supported = true;
    p.vector_cores = rmsnorm_backward::tiling::reference_platform::kVectorCores;
    p.ub_bytes = rmsnorm_backward::tiling::reference_platform::kUbBytes;
    return p;
}

rmsnorm_backward::tiling::TilingInput Tiling(const std::vector<TensorSpec> &in)
{
    rmsnorm_backward::tiling::TilingInput t;
    t.platform = RulesPlatform();
    t.dy_shape = in[0].shape, t.x_shape = in[1].shape, t.rstd_shape = in[2].shape, t.gamma_shape = in[3].shape;
    t.dy_dtype = in[0].dtype, t.x_dtype = in[1].dtype, t.rstd_dtype = in[2].dtype, t.gamma_dtype = in[3].dtype;
    return t;
}

// The ATB fault of a broken tiling rule: a dtype rule is a dtype fault, every other rule of the
// tensors a shape fault (the attributes and the platform are fixed here: RulesPlatform, no offset).
Fault FaultOf(const rmsnorm_backward::tiling::TilingError &error)
{
    return error.fault == rmsnorm_backward::tiling::TilingFault::kDtype ? Fault::kDtype : Fault::kShape;
}

}  // namespace

std::string ShapeText(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

Verdict CheckReserved(const uint8_t *rsv, size_t size)
{
    for (size_t i = 0; i < size; ++i) {
        if (rsv[i] != 0) {
            return Broken(Fault::kParam, "param.rsv must be all zero, its bytes are reserved (byte " + std::to_string(i) +
                                             " is " + std::to_string(rsv[i]) + ").");
        }
    }
    return {};
}

Verdict InferOutputs(const std::vector<TensorSpec> &inputs, std::vector<TensorSpec> &outputs)
{
    if (inputs.size() != kInputNum) {
        return Broken(Fault::kInputCount, std::string(kOperationName) + " takes " +
                                              Count(kInputNum, kInputNames) + " input tensors (got " +
                                              std::to_string(inputs.size()) + ").");
    }
    for (uint32_t i = 0; i < kInputNum; ++i) {
        if (!KnownFormat(inputs[i].format)) {
            return Broken(Fault::kFormat, std::string(kInputNames[i]) + " must have format " + Join(kFormats, kFormatNum, " or ") + " (got " +
                                              inputs[i].format + ").");
        }
    }
    rmsnorm_backward::tiling::TilingResult result;
    rmsnorm_backward::tiling::TilingError error;
    if (!rmsnorm_backward::tiling::ComputeTiling(Tiling(inputs), result, error)) {
        return Broken(FaultOf(error), error.message);
    }
    outputs.clear();
    for (const OutputRule &rule : kOutputs) {
        const TensorSpec &like = inputs[rule.shape_of];
        outputs.push_back({rule.dtype_of >= 0 ? inputs[rule.dtype_of].dtype : rule.dtype, like.format, like.shape});
    }
    return {};
}

Verdict CheckOutputs(const std::vector<TensorSpec> &inputs, const std::vector<TensorSpec> &outputs)
{
    std::vector<TensorSpec> want;
    Verdict inferred = InferOutputs(inputs, want);
    if (!inferred.ok()) return inferred;
    std::vector<const char *> names;
    for (const OutputRule &rule : kOutputs) names.push_back(rule.name);
    if (outputs.size() != kOutputNum) {
        return Broken(Fault::kOutputCount, std::string(kOperationName) + " takes " +
                                               Count(kOutputNum, names.data()) + " output tensors (got " +
                                               std::to_string(outputs.size()) + ").");
    }
    for (uint32_t i = 0; i < kOutputNum; ++i) {
        const std::string name = names[i], like = kInputNames[kOutputs[i].shape_of];
        if (outputs[i].shape != want[i].shape) {
            return Broken(Fault::kShape, name + " must have the shape of " + like + " " + ShapeText(want[i].shape) +
                                             " (got " + ShapeText(outputs[i].shape) + ").");
        }
        if (outputs[i].dtype != want[i].dtype) {
            const std::string rule = kOutputs[i].dtype_of >= 0 ? "the dtype of " + std::string(kInputNames[kOutputs[i].dtype_of]) + ", "
                                                                : "";
            return Broken(Fault::kDtype, name + " must be " + rule + want[i].dtype + " (got " + outputs[i].dtype + ").");
        }
        if (outputs[i].format != want[i].format) {
            return Broken(Fault::kFormat, name + " must have format " + want[i].format + " (got " +
                                              outputs[i].format + ").");
        }
    }
    return {};
}

}  // namespace rmsnorm_backward::atb
