// Loads a compiled kernel shared object and runs one launch on NumPy arrays.
// Every GM buffer gets guard canaries before and after it: the twin checks GlobalTensor and
// DataCopy accesses itself, the canaries catch raw pointer writes that bypass those checks.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gm_buffer.h"
#include "twin/launch_abi.h"

namespace py = pybind11;
using twin_host::CopyJob;
using twin_host::FindResident;
using twin_host::GuardedBuffer;
using twin_host::ParallelCopy;

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

// Runs the kernel in `so_path` on `arrays` (C-contiguous, writeable; None = a null GM_ADDR); the
// kernel's writes land in the arrays. Returns {"counter_names": [...], "cores": [[...] per core]}.
py::dict LaunchKernel(const std::string &so_path, const py::list &arrays, const std::vector<std::string> &names,
                      const std::string &soc, uint32_t block_dim, uint64_t tiling_key, uint64_t seed)
{
    const KernelLib &lib = Load(so_path);
    if (py::len(arrays) != names.size()) {
        Raise("InvalidInputError", "arrays and names must have the same length");
    }
    // Arrays made by gm_empty are GM already; the others are copied into guarded buffers and back.
    // Host pointers are taken with the GIL held; the copies and the launch run without it.
    std::vector<GuardedBuffer *> guarded(names.size(), nullptr);
    std::vector<std::unique_ptr<GuardedBuffer>> owned;
    std::vector<CopyJob> copy_in, copy_out;
    std::vector<TwinGmArg> gm;
    for (size_t i = 0; i < names.size(); ++i) {
        gm.push_back({nullptr, 0, names[i].c_str()});
        if (arrays[i].is_none()) {
            continue;
        }
        py::array array = py::reinterpret_borrow<py::array>(arrays[i]);
        auto *host = static_cast<uint8_t *>(array.mutable_data());
        guarded[i] = FindResident(host, array.nbytes());
        if (guarded[i] == nullptr) {
            owned.push_back(std::make_unique<GuardedBuffer>(array.nbytes(), seed + i));
            guarded[i] = owned.back().get();
            copy_in.push_back({guarded[i]->data(), host, guarded[i]->bytes()});
            copy_out.push_back({host, guarded[i]->data(), guarded[i]->bytes()});
        }
        gm[i].data = guarded[i]->data();
        gm[i].bytes = guarded[i]->bytes();
    }
    std::vector<uint64_t> counters(size_t(block_dim) * lib.info.num_counters);
    TwinLaunchArgs args{TWIN_ABI_VERSION, soc.c_str(), block_dim, tiling_key, seed,
                        uint32_t(gm.size()), gm.data(), counters.data()};
    auto result = std::make_unique<TwinLaunchResult>();
    std::string damage;
    {
        py::gil_scoped_release release;
        for (GuardedBuffer *g : guarded) {
            if (g != nullptr) {
                g->ResetGuards();
            }
        }
        ParallelCopy(copy_in);
        lib.launch(&args, result.get());
        for (size_t i = 0; i < guarded.size() && damage.empty(); ++i) {
            if (guarded[i] != nullptr && !guarded[i]->Damage().empty()) {
                damage = "GM buffer '" + names[i] + "': " + guarded[i]->Damage() +
                         " overwrote its guard canary (a raw pointer write outside the buffer)";
            }
        }
        if (result->status == TWIN_OK && damage.empty()) {
            ParallelCopy(copy_out);
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

void BindGmBuffers(py::module_ &m);  // gm_buffer.cpp

void BindLoader(py::module_ &m)
{
    BindGmBuffers(m);
    m.def("launch", &LaunchKernel, py::arg("so_path"), py::arg("arrays"), py::arg("names"), py::arg("soc"),
          py::arg("block_dim"), py::arg("tiling_key"), py::arg("seed"),
          "Run a kernel .so built by rmsnorm_backward.twin on NumPy arrays (GM buffers, written back).");
}
