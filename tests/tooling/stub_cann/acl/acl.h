// SPDX-License-Identifier: BSD-3-Clause
// Test double of the AscendCL runtime calls the aclnn demo makes (declared from the public API
// documentation's signatures, no CANN code). acl_stub.cpp implements them on host memory and logs
// every call, so a test can check the demo's order of creation and release.
#pragma once
#include <cstddef>
#include <cstdint>

typedef int aclError;
typedef void *aclrtStream;
enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST = 0 };
enum aclrtMemcpyKind { ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST };

extern "C" {
aclError aclInit(const char *configPath);
aclError aclFinalize();
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
}
