// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's tikicpulib.h, the CPU-debug runtime a CANN kernel UT (ops-nn's
// tests/ut/op_kernel/test_<op>.cpp) includes, so those UTs build unchanged against the twin and
// run their kernels on it:
// - AscendC::GmAlloc(bytes) / GmFree(p): GM buffers (zero-filled, 32-byte aligned); a kernel's GM
//   access must stay inside the buffer each argument points into;
// - ICPU_SET_TILING_KEY(key): what TILING_KEY_IS compares with in the next launch;
// - AscendC::SetKernelMode(KernelMode::AIV_MODE): the twin runs vector cores only, so any other mode
//   makes the next launch fail, naming it;
// - ICPU_RUN_KF(kernel, blockDim, args...): one launch on blockDim twin cores (SoC $TWIN_SOC,
//   default Ascend910B2), with the compiler's auto sync unless TWIN_ICPU_AUTO_SYNC is 0, its workspace the user part alone as in CANN's CPU debug (GetUserWorkspace
//   returns it unchanged); a broken rule fails the running gtest test with the twin's message (or,
//   without gtest, prints it and aborts, as CANN's CPU debug does);
// - ReadFile / WriteFile, the data-file helpers of ops-nn's data_utils.h.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_operator.h"

// bisheng's --cce-auto-sync (the twin's auto_sync): on unless the build says otherwise, as ops-nn
// compiles every kernel whose kernel directory's CMakeLists.txt does not say AUTO_SYNC false.
#ifndef TWIN_ICPU_AUTO_SYNC
#define TWIN_ICPU_AUTO_SYNC 1
#endif

enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };

namespace twin::icpu {

struct GmAllocation {
    uint8_t *data;
    uint64_t bytes;
};

struct State {
    std::mutex mutex;
    std::vector<GmAllocation> allocations;
    uint64_t tiling_key = 0;
    KernelMode mode = KernelMode::AIV_MODE;
};

inline State &Host()
{
    static State state;
    return state;
}

// The allocation holding p, as the launch's GM argument from p to its end.
inline TwinGmArg ArgFor(void *p, const char *name)
{
    std::lock_guard<std::mutex> lock(Host().mutex);
    auto *at = static_cast<uint8_t *>(p);
    for (const GmAllocation &a : Host().allocations) {
        if (at >= a.data && at < a.data + a.bytes) {
            return TwinGmArg{p, uint64_t(a.data + a.bytes - at), name, nullptr};
        }
    }
    return TwinGmArg{p, 0, name, nullptr};  // not from GmAlloc: any access to it is refused
}

// An argument as the untyped GM address it passes (nullptr stays null).
template <typename A>
void *Address(A arg)
{
    if constexpr (std::is_same_v<A, std::nullptr_t>) {
        return nullptr;
    } else {
        return (void *)(arg);
    }
}

template <typename... Params, typename... Args>
std::string Run(const char *kernel, void (*entry)(Params...), uint32_t block_dim, Args... args)
{
    static_assert(sizeof...(Params) == sizeof...(Args), "ICPU_RUN_KF: pass one argument per kernel parameter");
    if (Host().mode != KernelMode::AIV_MODE) {
        return Cat("ICPU_RUN_KF(", kernel, "): SetKernelMode chose mode ", int(Host().mode),
                   ", but the twin emulates AI vector cores only (KernelMode::AIV_MODE)");
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < sizeof...(Args); ++i) {
        names.push_back(Cat("argument ", i, " of ", kernel));
    }
    size_t i = 0;
    std::vector<TwinGmArg> gm{ArgFor(Address(args), names[i++].c_str())...};
    const char *soc = std::getenv("TWIN_SOC");
    TwinLaunchArgs launch{};
    launch.abi_version = TWIN_ABI_VERSION;
    launch.soc = soc != nullptr && *soc != '\0' ? soc : "Ascend910B2";
    launch.block_dim = block_dim;
    launch.tiling_key = Host().tiling_key;
    launch.seed = 1;
    launch.auto_sync = TWIN_ICPU_AUTO_SYNC;
    launch.num_gm = uint32_t(gm.size());
    launch.gm = gm.data();
    g_workspace_has_sys_part = false;
    static TwinLaunchResult result;
    if (LaunchKernel(entry, launch, result) == TWIN_OK) {
        return {};
    }
    return Cat("ICPU_RUN_KF(", kernel, ", ", block_dim, "): ", result.error);
}

inline void Report(const std::string &error)
{
    std::fprintf(stderr, "%s\n", error.c_str());
    std::abort();
}

}  // namespace twin::icpu

namespace AscendC {

inline void *GmAlloc(size_t size)
{
    const size_t bytes = (size + 31) / 32 * 32;
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(32, bytes == 0 ? 32 : bytes));
    if (p == nullptr) {
        return nullptr;
    }
    std::memset(p, 0, bytes == 0 ? 32 : bytes);
    std::lock_guard<std::mutex> lock(twin::icpu::Host().mutex);
    twin::icpu::Host().allocations.push_back({p, uint64_t(size)});
    return p;
}

inline void GmFree(void *p)
{
    auto &all = twin::icpu::Host().allocations;
    {
        std::lock_guard<std::mutex> lock(twin::icpu::Host().mutex);
        for (size_t i = 0; i < all.size(); ++i) {
            if (all[i].data == p) {
                all.erase(all.begin() + long(i));
                break;
            }
        }
    }
    std::free(p);
}

inline void SetKernelMode(KernelMode mode) { twin::icpu::Host().mode = mode; }

}  // namespace AscendC

#define ICPU_SET_TILING_KEY(key) (::twin::icpu::Host().tiling_key = static_cast<uint64_t>(key))

// A failed launch fails the gtest test it runs in (gtest.h came first, as in every ops-nn UT).
#ifdef ADD_FAILURE
#define TWIN_ICPU_FAIL(error) ADD_FAILURE() << (error)
#else
#define TWIN_ICPU_FAIL(error) ::twin::icpu::Report(error)
#endif

#define ICPU_RUN_KF(kernel, blockDim, ...)                                                           \
    do {                                                                                             \
        const std::string twin_icpu_error = ::twin::icpu::Run(#kernel, &kernel, (blockDim), __VA_ARGS__); \
        if (!twin_icpu_error.empty()) {                                                              \
            TWIN_ICPU_FAIL(twin_icpu_error);                                                         \
        }                                                                                            \
    } while (0)

inline bool ReadFile(const std::string &filePath, size_t &fileSize, void *buffer, size_t bufferSize)
{
    std::ifstream in(filePath, std::ios::binary | std::ios::ate);
    if (!in) {
        std::fprintf(stderr, "ReadFile: cannot open %s\n", filePath.c_str());
        return false;
    }
    const auto size = size_t(in.tellg());
    if (size > bufferSize) {
        std::fprintf(stderr, "ReadFile: %s has %zu bytes, more than the buffer's %zu\n", filePath.c_str(), size,
                     bufferSize);
        return false;
    }
    in.seekg(0);
    in.read(static_cast<char *>(buffer), std::streamsize(size));
    fileSize = size;
    return bool(in);
}

inline bool WriteFile(const std::string &filePath, const void *buffer, size_t size)
{
    std::ofstream out(filePath, std::ios::binary | std::ios::trunc);
    if (!out) {
        std::fprintf(stderr, "WriteFile: cannot open %s\n", filePath.c_str());
        return false;
    }
    out.write(static_cast<const char *>(buffer), std::streamsize(size));
    return bool(out);
}
