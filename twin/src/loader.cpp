// Loads a compiled kernel shared object and runs one launch on NumPy arrays.
// Every GM buffer gets guard canaries before and after it: the twin checks GlobalTensor and
// DataCopy accesses itself, the canaries catch raw pointer writes that bypass those checks.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "twin/launch_abi.h"

namespace py = pybind11;

namespace {

[[noreturn]] void Raise(const char *error_class, const std::string &message)
{
    py::object cls = py::module_::import("rmsnorm_backward.errors").attr(error_class);
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
}

struct KernelLib {
    TwinKernelInfo info{};
    TwinLaunchFn launch = nullptr;
};

// dlopen'ed objects stay loaded for the life of the process: their paths are content hashes, so a
// path never changes meaning, and unloading would run thread_local destructors of the twin.
const KernelLib &Load(const std::string &path)
{
    static std::mutex mutex;
    static std::map<std::string, KernelLib> libs;
    std::lock_guard<std::mutex> lock(mutex);
    auto found = libs.find(path);
    if (found != libs.end()) {
        return found->second;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        Raise("KernelCompileError", std::string("the compiled kernel could not be loaded: ") + dlerror());
    }
    auto info_fn = reinterpret_cast<TwinKernelInfoFn>(dlsym(handle, "twin_kernel_info"));
    KernelLib lib;
    lib.launch = reinterpret_cast<TwinLaunchFn>(dlsym(handle, "twin_launch"));
    if (info_fn == nullptr || lib.launch == nullptr) {
        Raise("KernelCompileError", "the shared object " + path + " was not built by run_kernel (no twin_launch)");
    }
    info_fn(&lib.info);
    if (lib.info.abi_version != TWIN_ABI_VERSION) {
        Raise("KernelCompileError", "the compiled kernel speaks twin ABI " + std::to_string(lib.info.abi_version) +
                                        ", this extension " + std::to_string(TWIN_ABI_VERSION) + "; rebuild it");
    }
    return libs.emplace(path, lib).first->second;
}

// Memory for GM buffers, kept for the next launch: fresh pages cost a page fault and a clearing
// per 4 KiB, more than copying the data in. Up to kPoolBytes stay cached.
class BlockPool {
public:
    static constexpr size_t kPoolBytes = size_t(1) << 30;

    static uint8_t *Take(size_t bytes)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = free_.find(bytes);
            if (it != free_.end()) {
                uint8_t *p = it->second;
                free_.erase(it);
                cached_ -= bytes;
                return p;
            }
        }
        void *p = std::aligned_alloc(4096, bytes);
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        return static_cast<uint8_t *>(p);
    }
    static void Give(uint8_t *p, size_t bytes)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        while (cached_ + bytes > kPoolBytes && !free_.empty()) {
            auto largest = std::prev(free_.end());
            std::free(largest->second);
            cached_ -= largest->first;
            free_.erase(largest);
        }
        if (bytes > kPoolBytes) {
            std::free(p);
            return;
        }
        free_.emplace(bytes, p);
        cached_ += bytes;
    }

private:
    static inline std::mutex mutex_;
    static inline std::multimap<size_t, uint8_t *> free_;
    static inline size_t cached_ = 0;
};

// Copies between the arrays and their GM buffers, spread over the host's cores: a launch on large
// tensors otherwise spends most of its wall time in this single-threaded memcpy.
struct CopyJob {
    uint8_t *dst;
    const uint8_t *src;
    size_t bytes;
};

void ParallelCopy(const std::vector<CopyJob> &jobs)
{
    constexpr size_t kMinPerThread = size_t(4) << 20;
    size_t total = 0;
    for (const CopyJob &j : jobs) {
        total += j.bytes;
    }
    const size_t threads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), total / kMinPerThread));
    const size_t share = (total + threads - 1) / threads;
    // Worker t copies bytes [t * share, (t + 1) * share) of the jobs laid end to end.
    auto work = [&](size_t t) {
        size_t lo = t * share, hi = std::min(total, lo + share), at = 0;
        for (const CopyJob &j : jobs) {
            const size_t a = std::max(lo, at), b = std::min(hi, at + j.bytes);
            if (a < b) {
                std::memcpy(j.dst + (a - at), j.src + (a - at), b - a);
            }
            at += j.bytes;
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) {
        pool.emplace_back(work, t);
    }
    work(0);
    for (std::thread &th : pool) {
        th.join();
    }
}

// One GM buffer: [guard][data][guard], data 1024-byte aligned like a device allocation.
class GuardedBuffer {
public:
    static constexpr size_t kGuard = 1024;

    GuardedBuffer(size_t bytes, uint64_t seed)
        : total_((2 * kGuard + bytes + 4095) / 4096 * 4096), base_(BlockPool::Take(total_)), bytes_(bytes), seed_(seed)
    {
        for (size_t i = 0; i < kGuard; ++i) {
            base_[i] = Canary(i);
            data()[bytes_ + i] = Canary(kGuard + i);
        }
    }
    ~GuardedBuffer() { BlockPool::Give(base_, total_); }
    GuardedBuffer(const GuardedBuffer &) = delete;
    GuardedBuffer &operator=(const GuardedBuffer &) = delete;

    uint8_t *data() const { return base_ + kGuard; }
    size_t bytes() const { return bytes_; }

    // Empty when both guards are intact; else which one and how far from the data it was hit.
    std::string Damage() const
    {
        for (size_t i = 0; i < kGuard; ++i) {
            if (base_[i] != Canary(i)) {
                return "a write reaching " + std::to_string(kGuard - i) + " bytes before its start";
            }
        }
        for (size_t i = kGuard; i-- > 0;) {
            if (data()[bytes_ + i] != Canary(kGuard + i)) {
                return "a write reaching " + std::to_string(i + 1) + " bytes past its end";
            }
        }
        return {};
    }

private:
    uint8_t Canary(size_t i) const { return uint8_t((i * 0x9E3779B97F4A7C15ull + seed_) >> 56) ^ 0x5A; }
    size_t total_;
    uint8_t *base_;
    size_t bytes_;
    uint64_t seed_;
};

// Runs the kernel in `so_path` on `arrays` (C-contiguous, writeable; None = a null GM_ADDR) and
// copies every buffer back. Returns {"counter_names": [...], "cores": [[...] per core]}.
py::dict LaunchKernel(const std::string &so_path, const py::list &arrays, const std::vector<std::string> &names,
                      const std::string &soc, uint32_t block_dim, uint64_t tiling_key, uint64_t seed)
{
    const KernelLib &lib = Load(so_path);
    if (py::len(arrays) != names.size()) {
        Raise("InvalidInputError", "arrays and names must have the same length");
    }
    // Host views of the arrays, taken with the GIL held; the copies and the launch run without it.
    std::vector<uint8_t *> host(names.size(), nullptr);
    std::vector<std::unique_ptr<GuardedBuffer>> buffers(names.size());
    std::vector<TwinGmArg> gm;
    for (size_t i = 0; i < names.size(); ++i) {
        gm.push_back({nullptr, 0, names[i].c_str()});
        if (!arrays[i].is_none()) {
            py::array array = py::reinterpret_borrow<py::array>(arrays[i]);
            host[i] = static_cast<uint8_t *>(array.mutable_data());
            buffers[i] = std::make_unique<GuardedBuffer>(array.nbytes(), seed + i);
            gm[i].data = buffers[i]->data();
            gm[i].bytes = buffers[i]->bytes();
        }
    }
    std::vector<uint64_t> counters(size_t(block_dim) * lib.info.num_counters);
    TwinLaunchArgs args{TWIN_ABI_VERSION, soc.c_str(), block_dim, tiling_key, seed,
                        uint32_t(gm.size()), gm.data(), counters.data()};
    auto result = std::make_unique<TwinLaunchResult>();
    std::string damage;
    {
        py::gil_scoped_release release;
        std::vector<CopyJob> in, out;
        for (size_t i = 0; i < buffers.size(); ++i) {
            if (buffers[i]) {
                in.push_back({buffers[i]->data(), host[i], buffers[i]->bytes()});
                out.push_back({host[i], buffers[i]->data(), buffers[i]->bytes()});
            }
        }
        ParallelCopy(in);
        lib.launch(&args, result.get());
        for (size_t i = 0; i < buffers.size() && damage.empty(); ++i) {
            if (buffers[i] && !buffers[i]->Damage().empty()) {
                damage = "GM buffer '" + names[i] + "': " + buffers[i]->Damage() +
                         " overwrote its guard canary (a raw pointer write outside the buffer)";
            }
        }
        if (result->status == TWIN_OK && damage.empty()) {
            ParallelCopy(out);
        }
    }
    if (result->status == TWIN_INVALID_INPUT) {
        Raise("InvalidInputError", result->error);
    }
    if (result->status == TWIN_RULE_ERROR) {
        Raise("TwinRuleError", damage.empty() ? std::string(result->error) : result->error + ("; also " + damage));
    }
    if (!damage.empty()) {
        Raise("TwinRuleError", damage);
    }
    py::list names_out;
    for (uint32_t c = 0; c < lib.info.num_counters; ++c) {
        names_out.append(lib.info.counter_names[c]);
    }
    py::list cores;
    for (uint32_t b = 0; b < block_dim; ++b) {
        py::list row;
        for (uint32_t c = 0; c < lib.info.num_counters; ++c) {
            row.append(counters[size_t(b) * lib.info.num_counters + c]);
        }
        cores.append(row);
    }
    py::dict out;
    out["counter_names"] = names_out;
    out["cores"] = cores;
    out["entry_arity"] = lib.info.entry_arity;
    return out;
}

}  // namespace

void BindLoader(py::module_ &m)
{
    m.def("launch", &LaunchKernel, py::arg("so_path"), py::arg("arrays"), py::arg("names"), py::arg("soc"),
          py::arg("block_dim"), py::arg("tiling_key"), py::arg("seed"),
          "Run a kernel .so built by rmsnorm_backward.twin on NumPy arrays (GM buffers, written back).");
}
