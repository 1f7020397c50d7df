// SPDX-License-Identifier: BSD-3-Clause
// A host-side stand-in for the AscendCL runtime calls the asc-devkit samples' main() makes, so the
// samples' own host code runs unchanged on the CPU: device memory is host memory, streams are
// nothing, and a kernel launch (`kernel<<<blocks, l2ctrl, stream>>>(args...)`, rewritten by
// tests/conformance/test_asc_devkit_samples.py into twin::host::Launch<site, &kernel>) hands the
// arguments to the Python side, which runs the kernel with rmsnorm_backward.twin.run_kernel through
// an entry that calls RunSite, and sends the device buffers back. Written for this project from the samples' usage; no CANN header is used.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <stdexcept>
#include <type_traits>
#include <utility>

using aclError = int32_t;
using aclrtStream = void *;
using aclrtContext = void *;
enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY };
enum aclrtMemcpyKind { ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                       ACL_MEMCPY_DEVICE_TO_DEVICE };
inline constexpr aclError ACL_SUCCESS = 0;
inline constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;

namespace twin::host {

// Device allocations by start address: their sizes travel with a launch.
inline std::map<const void *, size_t> &Allocations()
{
    static std::map<const void *, size_t> table;
    return table;
}

[[noreturn]] inline void Die(const std::string &why)
{
    std::fprintf(stderr, "twin host: %s\n", why.c_str());
    std::exit(97);
}

inline const char *WorkDir()
{
    const char *dir = std::getenv("TWIN_HOST_DIR");
    if (dir == nullptr) Die("TWIN_HOST_DIR is not set: this program runs under the sample runner");
    return dir;
}

inline void WriteBytes(const std::string &path, const void *data, size_t n)
{
    FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(data, 1, n, f) != n || std::fclose(f) != 0) Die("cannot write " + path);
}

inline void ReadBytes(const std::string &path, void *data, size_t n)
{
    FILE *f = std::fopen(path.c_str(), "rb");
    if (f == nullptr || std::fread(data, 1, n, f) != n) Die("cannot read back " + path);
    std::fclose(f);
}

// One launch argument as the runner's manifest line: a device buffer (its bytes go to a file and
// come back after the launch), a null pointer, or a scalar passed by value (integers as int64,
// floating point as double, anything else as its raw bytes).
template <typename A>
std::string Describe(int i, const A &arg)
{
    const std::string file = std::string(WorkDir()) + "/arg" + std::to_string(i) + ".bin";
    if constexpr (std::is_null_pointer_v<A>) {
        return "null";
    } else if constexpr (std::is_pointer_v<A>) {
        if (arg == nullptr) return "null";
        auto it = Allocations().find(static_cast<const void *>(arg));
        if (it == Allocations().end()) Die("launch argument " + std::to_string(i) + " is not the start of an aclrtMalloc buffer");
        WriteBytes(file, arg, it->second);
        return "buffer " + std::to_string(it->second);
    } else if constexpr (std::is_integral_v<A> || std::is_enum_v<A>) {
        const int64_t v = static_cast<int64_t>(arg);
        WriteBytes(file, &v, sizeof v);
        return "int";
    } else if constexpr (std::is_floating_point_v<A>) {
        const double v = static_cast<double>(arg);
        WriteBytes(file, &v, sizeof v);
        return "float";
    } else {
        static_assert(std::is_trivially_copyable_v<A>, "a kernel argument passed by value must be trivially copyable");
        WriteBytes(file, &arg, sizeof arg);
        return "bytes " + std::to_string(sizeof arg);
    }
}

template <typename A>
void Restore(int i, A &arg)
{
    if constexpr (std::is_pointer_v<A> && !std::is_null_pointer_v<A>) {
        if (arg != nullptr) {
            const std::string file = std::string(WorkDir()) + "/arg" + std::to_string(i) + ".bin";
            ReadBytes(file, arg, Allocations().at(static_cast<const void *>(arg)));
        }
    }
}

// The kernel side of a launch site: the launch's arguments arrive as GM buffers and are turned
// into the kernel's parameter types as the NPU's launch does (pointers as they are; scalars from
// the bytes Describe recorded: 'i' an int64, 'f' a double, else raw bytes).
template <typename P>
P Arg(uint8_t *gm, char kind)
{
    if constexpr (std::is_pointer_v<P>) {
        return reinterpret_cast<P>(gm);
    } else {
        if constexpr (std::is_arithmetic_v<P> || std::is_enum_v<P>) {
            if (kind == 'i' || kind == 'f') {
                int64_t i;
                double f;
                std::memcpy(&i, gm, sizeof i);
                std::memcpy(&f, gm, sizeof f);
                return kind == 'i' ? static_cast<P>(i) : static_cast<P>(f);
            }
        }
        P v;
        std::memcpy(static_cast<void *>(&v), gm, sizeof v);
        return v;
    }
}

using SiteEntry = void (*)(uint8_t *const *gm, const char *kinds, size_t count);

inline std::map<int, SiteEntry> &Sites()
{
    static std::map<int, SiteEntry> sites;
    return sites;
}

template <typename... P, size_t... I>
void CallKernel(void (*kernel)(P...), uint8_t *const *gm, const char *kinds, std::index_sequence<I...>)
{
    kernel(Arg<P>(gm[I], kinds[I])...);
}

template <typename F>
struct Arity;
template <typename... P>
struct Arity<void (*)(P...)> {
    static constexpr size_t value = sizeof...(P);
};

template <auto Kernel>
void RunKernel(uint8_t *const *gm, const char *kinds, size_t count)
{
    constexpr size_t arity = Arity<decltype(Kernel)>::value;
    if (count != arity) throw std::runtime_error("the launch passes a different number of arguments than the kernel takes");
    CallKernel(Kernel, gm, kinds, std::make_index_sequence<arity>{});
}

// Every launch site that the build instantiates registers its kernel when the program (or the
// twin's shared object) loads, so the runner's entry finds it by site number.
template <int Site, auto Kernel>
struct Registered {
    static inline const bool done = (Sites()[Site] = &RunKernel<Kernel>, true);
};

inline void RunSite(int site, uint8_t *const *gm, const char *kinds, size_t count)
{
    auto it = Sites().find(site);
    if (it == Sites().end()) throw std::runtime_error("the sample's launch site " + std::to_string(site) + " was not compiled");
    it->second(gm, kinds, count);
}

// The launch: the manifest goes to the runner (stdout), which answers on stdin when the twin ran
// the kernel ("done") or failed (then the program stops and the runner reports why).
template <int Site, auto Kernel, typename... A>
void Launch(int64_t blocks, A... args)
{
    (void)Registered<Site, Kernel>::done;
    const std::string manifest = std::string(WorkDir()) + "/launch.txt";
    std::string text = "site " + std::to_string(Site) + "\nblocks " + std::to_string(blocks) + "\n";
    int i = 0;
    ((text += Describe(i++, args) + "\n"), ...);
    WriteBytes(manifest, text.data(), text.size());
    std::cout << "@@twin-launch " << manifest << std::endl;
    std::string answer;
    if (!std::getline(std::cin, answer) || answer != "done") std::exit(98);
    i = 0;
    (Restore(i++, args), ...);
}

}  // namespace twin::host

inline aclError aclInit(const char *) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtCreateContext(aclrtContext *context, int32_t) { *context = nullptr; return ACL_SUCCESS; }
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream *stream) { *stream = nullptr; return ACL_SUCCESS; }
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }

// Device memory starts with a pattern, not zeros: a sample must not rely on what it never wrote.
inline aclError aclrtMalloc(void **ptr, size_t size, aclrtMemMallocPolicy)
{
    *ptr = std::malloc(size == 0 ? 1 : size);
    if (*ptr == nullptr) return ACL_ERROR_INVALID_PARAM;
    std::memset(*ptr, 0xA5, size);
    twin::host::Allocations()[*ptr] = size;
    return ACL_SUCCESS;
}
inline aclError aclrtMallocHost(void **ptr, size_t size)
{
    *ptr = std::malloc(size == 0 ? 1 : size);
    return *ptr == nullptr ? ACL_ERROR_INVALID_PARAM : ACL_SUCCESS;
}
inline aclError aclrtFree(void *ptr)
{
    twin::host::Allocations().erase(ptr);
    std::free(ptr);
    return ACL_SUCCESS;
}
inline aclError aclrtFreeHost(void *ptr)
{
    std::free(ptr);
    return ACL_SUCCESS;
}
inline aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind)
{
    if (count > destMax) return ACL_ERROR_INVALID_PARAM;
    std::memcpy(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void *dst, size_t destMax, int32_t value, size_t count)
{
    if (count > destMax) return ACL_ERROR_INVALID_PARAM;
    std::memset(dst, value, count);
    return ACL_SUCCESS;
}
