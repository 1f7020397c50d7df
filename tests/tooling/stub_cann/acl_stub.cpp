// Host-memory implementation of the stub AscendCL/aclnn calls: logs "<call> <args>" per line, checks
// that each resource is released once and after its last use, and that nothing is left at aclFinalize.
// STUB_FAIL=<call name> makes that call return status 561103.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "aclnn_rms_norm_backward.h"

struct aclTensor {
    void *data;
};
struct aclOpExecutor {
};

namespace {
std::map<const void *, int> g_ids;
std::set<const void *> g_memory, g_tensors;
bool g_stream = false;

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
}  // namespace

extern "C" {
aclError aclInit(const char *) { return Log("aclInit"); }
aclError aclrtSetDevice(int32_t id) { return Log("aclrtSetDevice", std::to_string(id)); }
aclError aclrtResetDevice(int32_t id)
{
    Require(!g_stream, "device reset while a stream exists");
    return Log("aclrtResetDevice", std::to_string(id));
}
aclError aclrtCreateStream(aclrtStream *s)
{
    g_stream = true;
    *s = &g_stream;
    return Log("aclrtCreateStream");
}
aclError aclrtDestroyStream(aclrtStream)
{
    Require(g_memory.empty() && g_tensors.empty(), "stream destroyed before every buffer and tensor was released");
    g_stream = false;
    return Log("aclrtDestroyStream");
}
aclError aclrtSynchronizeStream(aclrtStream) { return Log("aclrtSynchronizeStream"); }
aclError aclrtMalloc(void **p, size_t size, aclrtMemMallocPolicy)
{
    *p = std::calloc(size, 1);
    g_memory.insert(*p);
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
    Require(g_memory.empty() && g_tensors.empty() && !g_stream, "resources left at aclFinalize");
    return Log("aclFinalize");
}
aclTensor *aclCreateTensor(const int64_t *, uint64_t, aclDataType, const int64_t *, int64_t, aclFormat, const int64_t *,
                           uint64_t, void *data)
{
    aclTensor *t = new aclTensor{data};
    g_tensors.insert(t);
    Log("aclCreateTensor", "t" + std::to_string(Id(t)) + " m" + std::to_string(Id(data)));
    return t;
}
aclnnStatus aclDestroyTensor(const aclTensor *t)
{
    Require(g_tensors.erase(t) == 1, "aclDestroyTensor of a tensor not created or destroyed twice");
    int status = Log("aclDestroyTensor", "t" + std::to_string(Id(t)));
    delete t;
    return status;
}
aclnnStatus aclnnRmsNormBackwardGetWorkspaceSize(const aclTensor *, const aclTensor *, const aclTensor *,
                                                 const aclTensor *, const aclTensor *, const aclTensor *,
                                                 uint64_t *workspaceSize, aclOpExecutor **executor)
{
    static aclOpExecutor executor_;
    *workspaceSize = 4096;
    *executor = &executor_;
    return Log("aclnnRmsNormBackwardGetWorkspaceSize");
}
aclnnStatus aclnnRmsNormBackward(void *workspace, uint64_t size, aclOpExecutor *, aclrtStream)
{
    Require(g_memory.count(workspace) == 1 && size == 4096, "launched without the workspace it asked for");
    return Log("aclnnRmsNormBackward");
}
}
