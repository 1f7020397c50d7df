// SPDX-License-Identifier: BSD-3-Clause
// Host-memory implementation of the stub AscendCL/aclnn calls: logs "<call> <args>" per line, checks
// that each resource is released once and after its last use, and that nothing is left at aclFinalize.
// The first aclnn stage checks the tensors and sizes the workspace with the project's tiling, as the
// operator package's TilingFunc does on an NPU (for Ascend910B2); the second computes nothing, but
// with STUB_OUTPUTS=<dir> it fills dx and dgamma from <dir>/dx.bin and <dir>/dgamma.bin.
// STUB_FAIL=<call name> makes that call return status 561103.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "aclnn_rms_norm_backward.h"
#include "../../../op_host/tiling/rms_norm_backward_tiling.h"

struct aclTensor {
    void *data;
    aclDataType dtype;
    aclFormat format;
    std::vector<int64_t> shape;
};
struct aclOpExecutor {
    std::vector<const aclTensor *> tensors;  // dy, x, rstd, gamma, dx, dgamma
    uint64_t workspace = 0;
};

namespace {
std::map<const void *, int> g_ids;
std::map<const void *, size_t> g_memory;
std::set<const void *> g_tensors, g_streams;
int g_stream_tokens = 0;

int Id(const void *p)
{
    auto it = g_ids.find(p);
    return it == g_ids.end() ? (g_ids[p] = static_cast<int>(g_ids.size()) + 1) : it->second;
}

int Log(const char *call, const std::string &detail = "")
{
    std::printf("%s%s%s\n", call, detail.empty() ? "" : " ", detail.c_str());
    const char *fail = std::getenv("STUB_FAIL");
    return fail != nullptr && std::strcmp(fail, call) == 0 ? 561103 : 0;
}

void Require(bool ok, const char *what)
{
    if (!ok) {
        std::printf("ERROR %s\n", what);
        std::exit(99);
    }
}

constexpr aclnnStatus kAclnnParamInvalid = 161002;

std::string Dtype(aclDataType d)
{
    switch (d) {
        case ACL_FLOAT: return "float32";
        case ACL_FLOAT16: return "float16";
        case ACL_BF16: return "bfloat16";
        default: return "aclDataType" + std::to_string(static_cast<int>(d));
    }
}

size_t Bytes(const aclTensor &t)
{
    size_t n = t.dtype == ACL_FLOAT ? 4 : 2;
    for (int64_t d : t.shape) n *= static_cast<size_t>(d);
    return n;
}

// "float32[32,64,128]/2": dtype, shape and aclFormat, one word for the log.
std::string Describe(const aclTensor &t)
{
    std::string text = Dtype(t.dtype) + "[";
    for (size_t i = 0; i < t.shape.size(); ++i) text += (i ? "," : "") + std::to_string(t.shape[i]);
    return text + "]/" + std::to_string(static_cast<int>(t.format));
}

void Fill(const std::string &path, const aclTensor &t)
{
    FILE *f = std::fopen(path.c_str(), "rb");
    Require(f != nullptr, "STUB_OUTPUTS names a directory without dx.bin and dgamma.bin");
    std::vector<char> bytes(Bytes(t) + 1);
    const size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    Require(got == Bytes(t) && g_memory.count(t.data) == 1 && g_memory[t.data] >= got,
            "STUB_OUTPUTS file size differs from the output tensor it fills");
    std::memcpy(t.data, bytes.data(), got);
}
}  // namespace

extern "C" {
aclError aclInit(const char *) { return Log("aclInit"); }
aclError aclrtSetDevice(int32_t id) { return Log("aclrtSetDevice", std::to_string(id)); }
aclError aclrtResetDevice(int32_t id)
{
    Require(g_streams.empty(), "device reset while a stream exists");
    return Log("aclrtResetDevice", std::to_string(id));
}
aclError aclrtCreateStream(aclrtStream *s)
{
    *s = new int(++g_stream_tokens);
    g_streams.insert(*s);
    return Log("aclrtCreateStream", "s" + std::to_string(Id(*s)));
}
aclError aclrtDestroyStream(aclrtStream s)
{
    Require(g_memory.empty() && g_tensors.empty(), "stream destroyed before every buffer and tensor was released");
    Require(g_streams.erase(s) == 1, "aclrtDestroyStream of a stream not created or destroyed twice");
    int status = Log("aclrtDestroyStream", "s" + std::to_string(Id(s)));
    delete static_cast<int *>(s);
    return status;
}
aclError aclrtSynchronizeStream(aclrtStream s)
{
    Require(g_streams.count(s) == 1, "aclrtSynchronizeStream of a stream that does not exist");
    return Log("aclrtSynchronizeStream", "s" + std::to_string(Id(s)));
}
aclError aclrtMalloc(void **p, size_t size, aclrtMemMallocPolicy)
{
    *p = std::calloc(size == 0 ? 1 : size, 1);
    g_memory[*p] = size;
    return Log("aclrtMalloc", "m" + std::to_string(Id(*p)) + " " + std::to_string(size));
}
aclError aclrtFree(void *p)
{
    Require(g_memory.erase(p) == 1, "aclrtFree of memory not allocated or freed twice");
    for (const void *t : g_tensors) {
        Require(static_cast<const aclTensor *>(t)->data != p, "memory freed while a tensor still views it");
    }
    int status = Log("aclrtFree", "m" + std::to_string(Id(p)));
    std::free(p);
    return status;
}
aclError aclrtMemcpy(void *dst, size_t max, const void *src, size_t count, aclrtMemcpyKind kind)
{
    Require(count <= max, "aclrtMemcpy count exceeds destMax");
    std::memcpy(dst, src, count);
    return Log("aclrtMemcpy", kind == ACL_MEMCPY_HOST_TO_DEVICE ? "h2d" : "d2h");
}
aclError aclFinalize()
{
    Require(g_memory.empty() && g_tensors.empty() && g_streams.empty(), "resources left at aclFinalize");
    return Log("aclFinalize");
}
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *data)
{
    Require(offset == 0 && storageDimsNum == viewDimsNum &&
                std::equal(viewDims, viewDims + viewDimsNum, storageDims),
            "aclCreateTensor of a view: the operator takes dense tensors");
    int64_t step = 1;
    for (uint64_t i = viewDimsNum; i > 0; step *= viewDims[--i]) {
        Require(stride[i - 1] == step, "aclCreateTensor with strides that are not dense row-major");
    }
    aclTensor *t = new aclTensor{data, dataType, format, std::vector<int64_t>(viewDims, viewDims + viewDimsNum)};
    g_tensors.insert(t);
    Log("aclCreateTensor", "t" + std::to_string(Id(t)) + " m" + std::to_string(Id(data)) + " " + Describe(*t));
    return t;
}
aclnnStatus aclDestroyTensor(const aclTensor *t)
{
    Require(g_tensors.erase(t) == 1, "aclDestroyTensor of a tensor not created or destroyed twice");
    int status = Log("aclDestroyTensor", "t" + std::to_string(Id(t)));
    delete t;
    return status;
}
aclnnStatus aclnnRmsNormBackwardGetWorkspaceSize(const aclTensor *dy, const aclTensor *x, const aclTensor *rstd,
                                                 const aclTensor *gamma, const aclTensor *dres, double gammaOffset,
                                                 const aclTensor *dx, const aclTensor *dgamma,
                                                 uint64_t *workspaceSize, aclOpExecutor **executor)
{
    static aclOpExecutor executor_;
    executor_.tensors = {dy, x, rstd, gamma, dres, dx, dgamma};
    std::string detail;
    for (const aclTensor *t : executor_.tensors) {
        if (t == nullptr && (t == gamma || t == dres)) {  // an optional input, absent
            detail += " -";
            continue;
        }
        Require(g_tensors.count(t) == 1, "aclnnRmsNormBackwardGetWorkspaceSize of a tensor that does not exist");
        detail += (detail.empty() ? "t" : " t") + std::to_string(Id(t));
    }
    rmsnorm_backward::tiling::TilingInput in;
    // The stand-in device: what CANN's PlatformAscendC reports on an Ascend910B2.
    in.platform.soc = "Ascend910B2";
    in.platform.supported = true;
    in.platform.vector_cores = 48;
    in.platform.ub_bytes = 196608;
    in.platform.sys_workspace_bytes = 16ull << 20;
    in.dy_shape = dy->shape, in.x_shape = x->shape, in.rstd_shape = rstd->shape;
    in.dy_dtype = Dtype(dy->dtype), in.x_dtype = Dtype(x->dtype), in.rstd_dtype = Dtype(rstd->dtype);
    in.has_gamma = gamma != nullptr;
    in.has_dres = dres != nullptr;
    if (in.has_dres) {
        in.dres_shape = dres->shape, in.dres_dtype = Dtype(dres->dtype);
    }
    if (in.has_gamma) {
        in.gamma_shape = gamma->shape, in.gamma_dtype = Dtype(gamma->dtype);
    }
    in.gamma_offset = float(gammaOffset);  // a float attribute, as CANN holds it
    rmsnorm_backward::tiling::TilingResult tiling;
    rmsnorm_backward::tiling::TilingError error;
    if (!rmsnorm_backward::tiling::ComputeTiling(in, tiling, error)) {
        Log("aclnnRmsNormBackwardGetWorkspaceSize", detail + " rejected: " + error.message);
        return kAclnnParamInvalid;
    }
    *workspaceSize = executor_.workspace = tiling.workspace_bytes;
    *executor = &executor_;
    return Log("aclnnRmsNormBackwardGetWorkspaceSize", detail + " workspace " + std::to_string(*workspaceSize));
}
aclnnStatus aclnnRmsNormBackward(void *workspace, uint64_t size, aclOpExecutor *executor, aclrtStream stream)
{
    Require(executor != nullptr && executor->workspace == size, "launched without the workspace size it asked for");
    Require(g_memory.count(workspace) == 1 && g_memory[workspace] >= size, "launched without the workspace it asked for");
    Require(g_streams.count(stream) == 1, "launched on a stream that does not exist");
    for (const aclTensor *t : executor->tensors) {
        Require(t == nullptr || g_tensors.count(t) == 1, "launched after a tensor of its executor was destroyed");
    }
    int status = Log("aclnnRmsNormBackward", "m" + std::to_string(Id(workspace)) + " " + std::to_string(size) + " s" +
                                                 std::to_string(Id(stream)));
    if (const char *dir = std::getenv("STUB_OUTPUTS")) {
        Fill(std::string(dir) + "/dx.bin", *executor->tensors[5]);
        Fill(std::string(dir) + "/dgamma.bin", *executor->tensors[6]);
    }
    return status;
}
}
