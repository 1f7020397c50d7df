// Loads a compiled kernel shared object and runs one launch on NumPy arrays.
// Every GM buffer gets guard canaries before and after it: the twin checks GlobalTensor and
// DataCopy accesses itself, the canaries catch raw pointer writes that bypass those checks.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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

// One GM buffer: [guard][data][guard], data 1024-byte aligned like a device allocation.
class GuardedBuffer {
public:
    static constexpr size_t kGuard = 1024;

    GuardedBuffer(size_t bytes, uint64_t seed) : bytes_(bytes), seed_(seed)
    {
        const size_t total = (2 * kGuard + bytes + 4095) / 4096 * 4096;
        base_.reset(static_cast<uint8_t *>(std::aligned_alloc(4096, total)));
        if (!base_) {
            throw std::bad_alloc();
        }
        for (size_t i = 0; i < kGuard; ++i) {
            base_.get()[i] = Canary(i);
            data()[bytes_ + i] = Canary(kGuard + i);
        }
    }
    uint8_t *data() const { return base_.get() + kGuard; }
    size_t bytes() const { return bytes_; }

    // Empty when both guards are intact; else which one and how far from the data it was hit.
    std::string Damage() const
    {
        for (size_t i = 0; i < kGuard; ++i) {
            if (base_.get()[i] != Canary(i)) {
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
    struct Free {
        void operator()(uint8_t *p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> base_;
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
    std::vector<std::unique_ptr<GuardedBuffer>> buffers;
    std::vector<TwinGmArg> gm;
    for (size_t i = 0; i < names.size(); ++i) {
        py::handle item = arrays[i];
        if (item.is_none()) {
            buffers.emplace_back();
            gm.push_back({nullptr, 0, names[i].c_str()});
            continue;
        }
        py::array array = py::reinterpret_borrow<py::array>(item);
        auto buffer = std::make_unique<GuardedBuffer>(array.nbytes(), seed + i);
        std::memcpy(buffer->data(), array.data(), array.nbytes());
        gm.push_back({buffer->data(), buffer->bytes(), names[i].c_str()});
        buffers.push_back(std::move(buffer));
    }
    std::vector<uint64_t> counters(size_t(block_dim) * lib.info.num_counters);
    TwinLaunchArgs args{TWIN_ABI_VERSION, soc.c_str(), block_dim, tiling_key, seed,
                        uint32_t(gm.size()), gm.data(), counters.data()};
    auto result = std::make_unique<TwinLaunchResult>();
    {
        py::gil_scoped_release release;
        lib.launch(&args, result.get());
    }
    if (result->status == TWIN_INVALID_INPUT) {
        Raise("InvalidInputError", result->error);
    }
    std::string damage;
    for (size_t i = 0; i < buffers.size() && damage.empty(); ++i) {
        if (buffers[i] && !buffers[i]->Damage().empty()) {
            damage = "GM buffer '" + names[i] + "': " + buffers[i]->Damage() +
                     " overwrote its guard canary (a raw pointer write outside the buffer)";
        }
    }
    if (result->status == TWIN_RULE_ERROR) {
        Raise("TwinRuleError", damage.empty() ? std::string(result->error) : result->error + ("; also " + damage));
    }
    if (!damage.empty()) {
        Raise("TwinRuleError", damage);
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (buffers[i]) {
            py::array array = py::reinterpret_borrow<py::array>(arrays[i]);
            std::memcpy(array.mutable_data(), buffers[i]->data(), buffers[i]->bytes());
        }
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
