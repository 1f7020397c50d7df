// SPDX-License-Identifier: BSD-3-Clause
// RmsNormBackward through its aclnn API: the original operator text's demo (dy, x [32, 64, 128],
// rstd [32, 64, 1], gamma [128], fp32, every element 2.0), redone for aclnnRmsNormBackward.
// Built by the NPU presets only (cmake --preset ascend910b); run it after installing the .run package
// and sourcing vendors/<vendor>/bin/set_env.bash.
//
// With every input 2.0: xhat = x * rstd = 4, g = dy * gamma = 4, mean(g * xhat) = 16, so
// dx = rstd * (g - xhat * 16) = -120 everywhere and dgamma = 2048 rows * dy * xhat = 16384.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn_rms_norm_backward.h"

#define CHECK(expr)                                                                              \
    do {                                                                                         \
        const auto status_ = (expr);                                                             \
        if (status_ != 0) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s failed with status %d\n", __FILE__, __LINE__, #expr, \
                         static_cast<int>(status_));                                             \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

namespace {
constexpr int32_t kDeviceId = 0;
constexpr int64_t kDim0 = 32;
constexpr int64_t kDim1 = 64;
constexpr int64_t kDim2 = 128;

struct DeviceTensor {
    std::vector<int64_t> shape;
    void *data = nullptr;
    aclTensor *tensor = nullptr;

    int64_t Elements() const
    {
        int64_t n = 1;
        for (int64_t d : shape) {
            n *= d;
        }
        return n;
    }
};

// Device memory filled from `host` (fp32) and an ND aclTensor viewing it, row-major.
int CreateTensor(const std::vector<float> &host, DeviceTensor &t)
{
    const size_t bytes = host.size() * sizeof(float);
    CHECK(aclrtMalloc(&t.data, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(t.data, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(t.shape.size()) - 2; i >= 0; --i) {
        strides[i] = strides[i + 1] * t.shape[i + 1];
    }
    t.tensor = aclCreateTensor(t.shape.data(), t.shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                               t.shape.data(), t.shape.size(), t.data);
    return t.tensor == nullptr ? 1 : 0;
}

int CopyToHost(const DeviceTensor &t, std::vector<float> &host)
{
    host.resize(t.Elements());
    const size_t bytes = host.size() * sizeof(float);
    CHECK(aclrtMemcpy(host.data(), bytes, t.data, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    return 0;
}

// Counts elements of `got` farther than 1e-4 (relative) from `want`.
int64_t Mismatches(const std::vector<float> &got, float want)
{
    int64_t bad = 0;
    for (float v : got) {
        bad += std::fabs(v - want) > 1e-4f * std::fabs(want) ? 1 : 0;
    }
    return bad;
}
}  // namespace

int main()
{
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(kDeviceId));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));

    DeviceTensor dy{{kDim0, kDim1, kDim2}}, x{{kDim0, kDim1, kDim2}}, rstd{{kDim0, kDim1, 1}}, gamma{{kDim2}};
    DeviceTensor dx{{kDim0, kDim1, kDim2}}, dgamma{{kDim2}};
    for (DeviceTensor *t : {&dy, &x, &rstd, &gamma}) {
        CHECK(CreateTensor(std::vector<float>(t->Elements(), 2.0f), *t));
    }
    for (DeviceTensor *t : {&dx, &dgamma}) {
        CHECK(CreateTensor(std::vector<float>(t->Elements(), 0.0f), *t));
    }

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    const aclTensor *dres = nullptr;  // no residual stream: the plain RMSNorm backward
    const double gammaOffset = 0.0;   // the plain RMSNorm; 1.0 for Gemma's scale (1 + gamma)
    CHECK(aclnnRmsNormBackwardGetWorkspaceSize(dy.tensor, x.tensor, rstd.tensor, gamma.tensor, dres, gammaOffset,
                                               dx.tensor, dgamma.tensor, &workspaceSize, &executor));
    void *workspace = nullptr;
    if (workspaceSize > 0) {
        CHECK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    }
    CHECK(aclnnRmsNormBackward(workspace, workspaceSize, executor, stream));
    CHECK(aclrtSynchronizeStream(stream));  // the outputs are ready only after this

    std::vector<float> dxHost, dgammaHost;
    CHECK(CopyToHost(dx, dxHost));
    CHECK(CopyToHost(dgamma, dgammaHost));
    const int64_t bad = Mismatches(dxHost, -120.0f) + Mismatches(dgammaHost, 16384.0f);
    std::printf("dx[0] = %g (expect -120), dgamma[0] = %g (expect 16384), %lld mismatches\n", dxHost[0],
                dgammaHost[0], static_cast<long long>(bad));

    // Release in reverse order of creation: tensors and their memory, workspace, stream, device.
    for (DeviceTensor *t : {&dy, &x, &rstd, &gamma, &dx, &dgamma}) {
        CHECK(aclDestroyTensor(t->tensor));
        CHECK(aclrtFree(t->data));
    }
    if (workspace != nullptr) {
        CHECK(aclrtFree(workspace));
    }
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(kDeviceId));
    CHECK(aclFinalize());
    if (bad != 0) {
        return 1;
    }
    std::printf("RmsNormBackward aclnn demo success!\n");
    return 0;
}
