// SPDX-License-Identifier: BSD-3-Clause
// ATB's RmsNormBackwardOperation demo (dy, x [32, 64, 128], rstd [32, 64, 1], gamma [128], fp32,
// every element 2.0: Setup, workspace, Execute, synchronize, free) on this project's ATB operation,
// plus a check of dx and dgamma against the closed-form answer. Built by the NPU presets; run it
// after installing the operator package and sourcing vendors/<vendor>/bin/set_env.bash.
//
// With constant inputs dy = a, x = b, rstd = r, gamma = g: xhat = b*r and dy*gamma = a*g in every
// lane, mean(dy*gamma*xhat) = a*g*b*r, so dx = r*(a*g - b*r*a*g*b*r) = r*a*g*(1 - (b*r)^2) and
// dgamma = rows * a*b*r (for 2.0 everywhere: -120 and 16384).
#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "atb/context.h"
#include "atb/operation.h"
#include "atb/types.h"
#include "atb/utils.h"
#include "rms_norm_backward_operation.h"

#define CHECK_STATUS(expr)                                                                          \
    do {                                                                                            \
        const auto status_ = (expr);                                                                \
        if (status_ != 0) {                                                                         \
            std::cerr << __FILE__ << ":" << __LINE__ << ": " << #expr << " failed with status "      \
                      << static_cast<int>(status_) << std::endl;                                     \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

namespace {
constexpr int32_t kDeviceId = 0;
constexpr int64_t kDim0 = 32;
constexpr int64_t kDim1 = 64;
constexpr int64_t kDim2 = 128;
constexpr float kValue = 2.0f;  // dy, x, rstd and gamma
// The fp32 precision standard: an element fails when off by more than both tolerances.
constexpr double kAtol = 1e-4;
constexpr double kRtol = 1e-4;

// An fp32 ND tensor of `shape` in fresh device memory.
int CreateTensor(const std::vector<int64_t> &shape, atb::Tensor &tensor)
{
    tensor.desc.dtype = ACL_FLOAT;
    tensor.desc.format = ACL_FORMAT_ND;
    tensor.desc.shape.dimNum = shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
        tensor.desc.shape.dims[i] = shape[i];
    }
    tensor.dataSize = atb::Utils::GetTensorSize(tensor);
    CHECK_STATUS(aclrtMalloc(&tensor.deviceData, tensor.dataSize, ACL_MEM_MALLOC_HUGE_FIRST));
    return 0;
}

// CreateTensor, then every element set to `value`.
int CreateFilledTensor(const std::vector<int64_t> &shape, float value, atb::Tensor &tensor)
{
    CHECK_STATUS(CreateTensor(shape, tensor));
    const std::vector<float> host(tensor.dataSize / sizeof(float), value);
    CHECK_STATUS(aclrtMemcpy(tensor.deviceData, tensor.dataSize, host.data(), tensor.dataSize, ACL_MEMCPY_HOST_TO_DEVICE));
    return 0;
}

int CopyToHost(const atb::Tensor &tensor, std::vector<float> &host)
{
    host.resize(tensor.dataSize / sizeof(float));
    CHECK_STATUS(aclrtMemcpy(host.data(), tensor.dataSize, tensor.deviceData, tensor.dataSize, ACL_MEMCPY_DEVICE_TO_HOST));
    return 0;
}

int64_t Mismatches(const std::vector<float> &got, double want)
{
    int64_t bad = 0;
    for (float v : got) {
        const double err = std::fabs(v - want);
        bad += !(err <= kAtol || err <= kRtol * std::fabs(want)) ? 1 : 0;
    }
    return bad;
}
}  // namespace

int main()
{
    atb::Context *context = nullptr;
    aclrtStream stream = nullptr;
    CHECK_STATUS(aclInit(nullptr));
    CHECK_STATUS(aclrtSetDevice(kDeviceId));
    CHECK_STATUS(atb::CreateContext(&context));
    CHECK_STATUS(aclrtCreateStream(&stream));
    CHECK_STATUS(context->SetExecuteStream(stream));

    rmsnorm_backward::atb::RmsNormBackwardParam param;
    atb::Operation *op = nullptr;
    CHECK_STATUS(rmsnorm_backward::atb::CreateOperation(param, &op));

    atb::VariantPack variantPack;
    atb::Tensor dy, x, rstd, gamma, dx, dgamma;
    CHECK_STATUS(CreateFilledTensor({kDim0, kDim1, kDim2}, kValue, dy));
    CHECK_STATUS(CreateFilledTensor({kDim0, kDim1, kDim2}, kValue, x));
    CHECK_STATUS(CreateFilledTensor({kDim0, kDim1, 1}, kValue, rstd));
    CHECK_STATUS(CreateFilledTensor({kDim2}, kValue, gamma));
    CHECK_STATUS(CreateTensor({kDim0, kDim1, kDim2}, dx));
    CHECK_STATUS(CreateTensor({kDim2}, dgamma));
    variantPack.inTensors = {dy, x, rstd, gamma};
    variantPack.outTensors = {dx, dgamma};

    uint64_t workspaceSize = 0;
    CHECK_STATUS(op->Setup(variantPack, workspaceSize, context));
    void *workspace = nullptr;
    if (workspaceSize > 0) {
        CHECK_STATUS(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    }
    CHECK_STATUS(op->Execute(variantPack, static_cast<uint8_t *>(workspace), workspaceSize, context));
    CHECK_STATUS(aclrtSynchronizeStream(stream));  // the outputs are ready only after this

    std::vector<float> dxHost, dgammaHost;
    CHECK_STATUS(CopyToHost(dx, dxHost));
    CHECK_STATUS(CopyToHost(dgamma, dgammaHost));
    const double a = kValue, b = kValue, r = kValue, g = kValue;
    const double wantDx = r * a * g * (1.0 - (b * r) * (b * r));
    const double wantDgamma = double(kDim0 * kDim1) * a * b * r;
    const int64_t bad = Mismatches(dxHost, wantDx) + Mismatches(dgammaHost, wantDgamma);
    std::cout << "dx[0] = " << dxHost[0] << " (closed form " << wantDx << "), dgamma[0] = " << dgammaHost[0]
              << " (closed form " << wantDgamma << "), " << bad << " mismatches" << std::endl;

    // Release: device memory, the workspace, the operation, then the stream and the context.
    for (atb::Tensor &t : variantPack.inTensors) {
        CHECK_STATUS(aclrtFree(t.deviceData));
    }
    for (atb::Tensor &t : variantPack.outTensors) {
        CHECK_STATUS(aclrtFree(t.deviceData));
    }
    if (workspace != nullptr) {
        CHECK_STATUS(aclrtFree(workspace));
    }
    CHECK_STATUS(atb::DestroyOperation(op));
    CHECK_STATUS(aclrtDestroyStream(stream));
    CHECK_STATUS(atb::DestroyContext(context));
    CHECK_STATUS(aclrtResetDevice(kDeviceId));
    CHECK_STATUS(aclFinalize());
    if (bad != 0) {
        return 1;
    }
    std::cout << "RmsNormBackward ATB demo success!" << std::endl;
    return 0;
}
