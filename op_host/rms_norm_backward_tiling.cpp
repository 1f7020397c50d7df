// SPDX-License-Identifier: BSD-3-Clause
// CANN glue of RmsNormBackward (built only with CANN): TilingFunc, InferShape and InferDataType,
// registered by the generated op_host/rms_norm_backward_def.cpp. The TilingFunc only translates
// between CANN's contexts and the plain tiling (op_host/tiling), which does all the work and is the
// same code the CPU twin runs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
// CANN's operator log (the OP_LOGE ops-nn's TilingFuncs use); stderr where the install lacks it.
#if __has_include("op_common/log/log.h")
#include "op_common/log/log.h"
#define RMSNB_LOG_ERROR(node, text) OP_LOGE(node, "%s", text)
#else
#define RMSNB_LOG_ERROR(node, text) std::fprintf(stderr, "RmsNormBackward (%s): %s\n", node, text)
#endif

#include "op_proto/rms_norm_backward_proto.h"
#include "rms_norm_backward_dtypes.h"
#include "tiling/rms_norm_backward_tiling.h"

namespace {

enum InputIndex : size_t { kDy = 0, kX = 1, kRstd = 2, kGamma = 3, kDres = 4 };
enum OutputIndex : size_t { kDx = 0, kDgamma = 1 };
enum AttrIndex : size_t { kGammaOffset = 0 };

std::vector<int64_t> Dims(const gert::StorageShape *shape)
{
    std::vector<int64_t> dims;
    if (shape != nullptr) {
        const gert::Shape &s = shape->GetStorageShape();
        for (size_t i = 0; i < s.GetDimNum(); ++i) {
            dims.push_back(s.GetDim(i));
        }
    }
    return dims;
}

// NumPy-style names, the vocabulary of the plain tiling's validation (op_def's dtype table).
std::string DtypeName(const gert::CompileTimeTensorDesc *desc)
{
    if (desc == nullptr) return "missing";
#define RMSNB_NAME_OF(name, ge_type, acl_type, at_type) case ge::ge_type: return std::string(name);
#define RMSNB_NAME_OF_REJECTED(name, ge_type) case ge::ge_type: return std::string(name);
    switch (desc->GetDataType()) {
        RMSNB_DTYPES(RMSNB_NAME_OF)
        RMSNB_REJECTED_DTYPES(RMSNB_NAME_OF_REJECTED)
        default: return "dtype " + std::to_string(int(desc->GetDataType()));
    }
#undef RMSNB_NAME_OF
#undef RMSNB_NAME_OF_REJECTED
}

// The SoC family's name, for messages (the facts themselves come from the platform).
const char *SocName(platform_ascendc::SocVersion version)
{
    switch (version) {
        case platform_ascendc::SocVersion::ASCEND910B: return "ascend910b";
        case platform_ascendc::SocVersion::ASCEND910_93: return "ascend910_93";
        default: return "an unsupported SoC";
    }
}

// Logs `why` under the node's name and returns failure: every bad path of the three functions ends here.
template <class Context>
ge::graphStatus Fail(Context *context, const std::string &why)
{
    const char *node = context->GetNodeName();
    RMSNB_LOG_ERROR(node == nullptr ? "RmsNormBackward" : node, why.c_str());
    return ge::GRAPH_FAILED;
}

}  // namespace

namespace optiling {

ge::graphStatus RmsNormBackwardTilingFunc(gert::TilingContext *context)
{
    if (context->GetPlatformInfo() == nullptr) {
        return Fail(context, "CANN provided no platform information (GetPlatformInfo returned null).");
    }
    const auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    rmsnorm_backward::tiling::TilingInput in;
    in.platform = rmsnorm_backward::tiling::PlatformFactsOf(platform, platform_ascendc::CoreMemType::UB,
                                                    SocName(platform.GetSocVersion()));
    in.dy_shape = Dims(context->GetInputShape(kDy));
    in.x_shape = Dims(context->GetInputShape(kX));
    in.rstd_shape = Dims(context->GetInputShape(kRstd));
    const gert::StorageShape *gamma = context->GetOptionalInputShape(kGamma);  // null: no gamma
    in.has_gamma = gamma != nullptr;
    in.gamma_shape = Dims(gamma);
    in.dy_dtype = DtypeName(context->GetInputDesc(kDy));
    in.x_dtype = DtypeName(context->GetInputDesc(kX));
    in.rstd_dtype = DtypeName(context->GetInputDesc(kRstd));
    in.gamma_dtype = in.has_gamma ? DtypeName(context->GetOptionalInputDesc(kGamma)) : "";
    const gert::StorageShape *dres = context->GetOptionalInputShape(kDres);  // null: no residual stream
    in.has_dres = dres != nullptr;
    in.dres_shape = Dims(dres);
    in.dres_dtype = in.has_dres ? DtypeName(context->GetOptionalInputDesc(kDres)) : "";
    const gert::RuntimeAttrs *attrs = context->GetAttrs();
    if (attrs == nullptr) {
        return Fail(context, "CANN provided no attributes (GetAttrs returned null).");
    }
    const float *gammaOffset = attrs->GetFloat(kGammaOffset);
    in.gamma_offset = gammaOffset == nullptr ? 0.0f : *gammaOffset;  // absent: op_def's default

    rmsnorm_backward::tiling::TilingResult out;
    rmsnorm_backward::tiling::TilingError error;
    if (!rmsnorm_backward::tiling::ComputeTiling(in, out, error)) {
        return Fail(context, error.message);
    }
    // An aclnn caller allocates dx and dgamma itself: wrong ones would be written out of bounds.
    error = rmsnorm_backward::tiling::CheckOutputs(in, Dims(context->GetOutputShape(kDx)), DtypeName(context->GetOutputDesc(kDx)),
                                           Dims(context->GetOutputShape(kDgamma)),
                                           DtypeName(context->GetOutputDesc(kDgamma)));
    if (!error.ok()) {
        return Fail(context, error.message);
    }
    gert::TilingData *raw = context->GetRawTilingData();
    if (raw == nullptr) {
        return Fail(context, "CANN provided no tiling data buffer (GetRawTilingData returned null).");
    }
    if (raw->GetCapacity() < sizeof(out.data)) {
        return Fail(context, "the tiling data buffer CANN provides holds " + std::to_string(raw->GetCapacity()) +
                                 " bytes, fewer than the " + std::to_string(sizeof(out.data)) +
                                 " of RmsNormBackwardTilingData.");
    }
    size_t *workspaces = context->GetWorkspaceSizes(1);
    if (workspaces == nullptr) {
        return Fail(context, "CANN provided no workspace size slot (GetWorkspaceSizes returned null).");
    }
    std::memcpy(raw->GetData(), &out.data, sizeof(out.data));
    raw->SetDataSize(sizeof(out.data));
    context->SetBlockDim(out.block_dim);
    context->SetTilingKey(out.tiling_key);
    workspaces[0] = out.workspace_bytes;
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

ge::graphStatus RmsNormBackwardInferShape(gert::InferShapeContext *context)
{
    const gert::Shape *x = context->GetInputShape(kX);
    const gert::Shape *gamma = context->GetOptionalInputShape(kGamma);  // null: no gamma, and dgamma is empty
    gert::Shape *dx = context->GetOutputShape(kDx);
    gert::Shape *dgamma = context->GetOutputShape(kDgamma);
    if (x == nullptr || dx == nullptr || dgamma == nullptr) {
        return Fail(context, "CANN provided no shape for x, dx or dgamma (InferShape).");
    }
    *dx = *x;
    *dgamma = gamma != nullptr ? *gamma : gert::Shape({0});
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus RmsNormBackwardInferDataType(gert::InferDataTypeContext *context)
{
    if (context->SetOutputDataType(kDx, context->GetInputDataType(kX)) != ge::GRAPH_SUCCESS ||
        context->SetOutputDataType(kDgamma, ge::DT_FLOAT) != ge::GRAPH_SUCCESS) {
        return Fail(context, "CANN did not accept the output dtypes of dx and dgamma (InferDataType).");
    }
    return ge::GRAPH_SUCCESS;
}

}  // namespace ge
