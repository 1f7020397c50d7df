// SPDX-License-Identifier: BSD-3-Clause
// Loads a compiled kernel shared object and runs one launch on NumPy arrays, in a launch process
// (launch_process.h) so that a crash, a hang or Ctrl-C stops the launch and not the caller.
// Every GM buffer gets guard canaries before and after it: the twin checks GlobalTensor and
// DataCopy accesses itself, the canaries catch raw pointer writes that bypass those checks.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gm_buffer.h"
#include "launch_process.h"
#include "raise_error.h"
#include "twin/launch_abi.h"

namespace py = pybind11;
using twin::host::CopyJob;
using twin::host::FindResident;
using twin::host::GuardedBuffer;
using twin::host::ParallelCopy;
using twin::host::RaiseError;
using twin::host::SharedLaunch;

namespace {

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
        RaiseError("EnvironmentSetupError", std::string("the compiled kernel could not be loaded: ") + dlerror());
    }
    auto info_fn = reinterpret_cast<TwinKernelInfoFn>(dlsym(handle, "twin_kernel_info"));
    KernelLib lib;
    lib.launch = reinterpret_cast<TwinLaunchFn>(dlsym(handle, "twin_launch"));
    if (info_fn == nullptr || lib.launch == nullptr) {
        RaiseError("EnvironmentSetupError", "the shared object " + path + " was not built by run_kernel (no twin_launch)");
    }
    info_fn(&lib.info);
    if (lib.info.abi_version != TWIN_ABI_VERSION) {
        RaiseError("EnvironmentSetupError", "the compiled kernel speaks twin ABI " + std::to_string(lib.info.abi_version) +
                                        ", this extension " + std::to_string(TWIN_ABI_VERSION) + "; rebuild it");
    }
    return libs.emplace(path, lib).first->second;
}

// The launch's arguments, counters and result, laid out in one arena buffer where the launch
// process reads and writes them (the caller's own memory is a stale copy there).
class SharedBlock {
public:
    // sizes: each GM buffer's bytes, for its undefined-byte flags (TwinGmArg::undefined).
    SharedBlock(const std::vector<std::string> &names, const std::vector<size_t> &sizes, const std::string &soc,
                size_t num_counters, const std::vector<double> &model_values)
        : buffer_(Bytes(names, sizes, soc, num_counters) + model_values.size() * sizeof(double), 0),
          at_(buffer_.data())
    {
        shared = new (Take<SharedLaunch>(1)) SharedLaunch();
        gm = Take<TwinGmArg>(names.size());
        for (size_t i = 0; i < names.size(); ++i) {
            gm[i] = {nullptr, 0, Copy(names[i]), Take<uint8_t>(sizes[i])};
            std::fill(gm[i].undefined, gm[i].undefined + sizes[i], uint8_t(0));
        }
        counters = Take<uint64_t>(num_counters);
        std::fill(counters, counters + num_counters, 0);
        soc_name = Copy(soc);
        model = Take<double>(model_values.size());
        std::copy(model_values.begin(), model_values.end(), model);
    }

    SharedLaunch *shared;
    TwinGmArg *gm;
    uint64_t *counters;
    const char *soc_name;
    double *model;

private:
    static size_t Bytes(const std::vector<std::string> &names, const std::vector<size_t> &sizes,
                        const std::string &soc, size_t num_counters)
    {
        size_t bytes = sizeof(SharedLaunch) + names.size() * sizeof(TwinGmArg) + num_counters * 8 + soc.size() + 64;
        for (size_t i = 0; i < names.size(); ++i) {
            bytes += names[i].size() + 1 + sizes[i];
        }
        return bytes;
    }
    template <typename T>
    T *Take(size_t n)
    {
        at_ += (alignof(T) - uintptr_t(at_) % alignof(T)) % alignof(T);
        T *p = reinterpret_cast<T *>(at_);
        at_ += n * sizeof(T);
        return p;
    }
    const char *Copy(const std::string &text)
    {
        char *p = Take<char>(text.size() + 1);
        std::memcpy(p, text.c_str(), text.size() + 1);
        return p;
    }

    GuardedBuffer buffer_;
    uint8_t *at_;
};

bool PythonInterrupted()
{
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
}

std::string SignalName(int sig)
{
    const char *abbrev = sigabbrev_np(sig);
    const char *text = strsignal(sig);
    return (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig)) + " (" + (text ? text : "") + ")";
}

[[noreturn]] void RaiseCrash(const twin::host::LaunchOutcome &outcome, const twin::host::CrashReport &report,
                             const std::string &damage)
{
    std::string message;
    py::object core = py::none();
    if (outcome.signal != 0 && report.signal.load() == outcome.signal) {
        if (report.core >= 0) {
            message = "core " + std::to_string(report.core) + ": ";
            core = py::int_(report.core);
        }
        message += "the kernel crashed with " + SignalName(outcome.signal);
        if (outcome.signal == SIGSEGV || outcome.signal == SIGBUS) {
            char address[32];
            std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(report.address));
            message += " at address " + std::string(address) + " (a null or wild pointer)";
        }
    } else if (outcome.signal == SIGKILL) {
        message = "the launch process was killed by SIGKILL from outside the twin (the out-of-memory killer?)";
    } else if (outcome.signal != 0) {
        message = "the kernel's launch process ended with " + SignalName(outcome.signal);
    } else {
        message = "the kernel ended its launch process with exit status " + std::to_string(outcome.exit_status) +
                  " (exit() called in a kernel?)";
    }
    message += "; the caller carries on";
    if (!damage.empty()) {
        message += "; also " + damage;
    }
    py::object cls = py::module_::import("ascendc_twin.errors").attr("KernelCrashError");
    py::object error = cls(message, outcome.signal != 0 ? py::object(py::int_(outcome.signal)) : py::none(), core);
    PyErr_SetObject(cls.ptr(), error.ptr());
    throw py::error_already_set();
}

std::string Seconds(double s)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", s);
    return text;
}

// One launch made ready: the shared block the launch process reads, and every GM buffer guarded.
// Arrays made by gm_empty are GM already; the others are copied into guarded buffers (copy_in)
// and back (copy_out). Host pointers are taken here, with the GIL held.
struct PreparedLaunch {
    PreparedLaunch(const KernelLib &lib, const py::list &arrays, const std::vector<std::string> &names,
                   const std::string &soc, uint32_t block_dim, uint64_t tiling_key, uint64_t seed,
                   const std::vector<double> &model, bool auto_sync)
        : sizes(ArraySizes(arrays, names)),
          block(names, sizes, soc, size_t(block_dim) * lib.info.num_counters, model),
          guarded(names.size(), nullptr)
    {
        for (size_t i = 0; i < names.size(); ++i) {
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
            block.gm[i].data = guarded[i]->data();
            block.gm[i].bytes = guarded[i]->bytes();
        }
        block.shared->args = {TWIN_ABI_VERSION, block.soc_name, block_dim, tiling_key, seed, uint32_t(names.size()),
                              block.gm, block.counters, uint32_t(model.size()), block.model, auto_sync ? 1u : 0u};
    }

    static std::vector<size_t> ArraySizes(const py::list &arrays, const std::vector<std::string> &names)
    {
        if (py::len(arrays) != names.size()) {
            RaiseError("InvalidInputError", "arrays and names must have the same length");
        }
        std::vector<size_t> sizes(names.size(), 0);
        for (size_t i = 0; i < names.size(); ++i) {
            sizes[i] = arrays[i].is_none() ? 0 : size_t(py::reinterpret_borrow<py::array>(arrays[i]).nbytes());
        }
        return sizes;
    }

    std::vector<size_t> sizes;  // each GM buffer's bytes
    SharedBlock block;
    std::vector<GuardedBuffer *> guarded;  // per argument; nullptr for None
    std::vector<std::unique_ptr<GuardedBuffer>> owned;
    std::vector<CopyJob> copy_in, copy_out;
};

// How a launch ended, as seen from the caller: the launch process's outcome, a failure to start it,
// and the first guard canary a raw pointer write overwrote.
struct RunResult {
    twin::host::LaunchOutcome outcome;
    std::string failure;
    std::string damage;
};

// Runs a prepared launch in a launch process, without the GIL: guards reset, arrays copied in, and
// copied back only when the kernel finished cleanly.
RunResult Run(PreparedLaunch &launch, const std::string &so_path, const std::vector<std::string> &names,
              double timeout_s)
{
    RunResult run;
    py::gil_scoped_release release;
    for (GuardedBuffer *g : launch.guarded) {
        if (g != nullptr) {
            g->ResetGuards();
        }
    }
    ParallelCopy(launch.copy_in);
    try {
        run.outcome = twin::host::RunInLaunchProcess(so_path, launch.block.shared, timeout_s, &PythonInterrupted);
    } catch (const std::runtime_error &e) {
        run.failure = e.what();
    }
    for (size_t i = 0; i < launch.guarded.size() && run.damage.empty(); ++i) {
        if (launch.guarded[i] != nullptr && !launch.guarded[i]->Damage().empty()) {
            run.damage = "GM buffer '" + names[i] + "': " + launch.guarded[i]->Damage() +
                         " overwrote its guard canary (a raw pointer write outside the buffer)";
        }
    }
    if (run.failure.empty() && run.outcome.end == twin::host::LaunchEnd::kFinished &&
        launch.block.shared->result.status == TWIN_OK && run.damage.empty()) {
        ParallelCopy(launch.copy_out);
    }
    return run;
}

// Raises the exception a launch that did not end cleanly stands for; returns when it did.
void RaiseOutcome(const RunResult &run, const SharedLaunch &shared, double timeout_s)
{
    if (!run.failure.empty()) {
        RaiseError("EnvironmentSetupError", run.failure);
    }
    switch (run.outcome.end) {
        case twin::host::LaunchEnd::kInterrupted:
            throw py::error_already_set();  // the KeyboardInterrupt that PyErr_CheckSignals raised
        case twin::host::LaunchEnd::kTimedOut:
            RaiseError("TwinTimeoutError", "the kernel did not finish within " + Seconds(timeout_s) +
                                          " s (run_kernel's timeout); its launch process was stopped");
        case twin::host::LaunchEnd::kCrashed:
            RaiseCrash(run.outcome, shared.crash, run.damage);
        case twin::host::LaunchEnd::kFinished:
            break;
    }
    const TwinLaunchResult &result = shared.result;
    if (result.status == twin::host::kNotLoaded) {
        RaiseError("EnvironmentSetupError", std::string("the launch process could not load the compiled kernel: ") + result.error);
    }
    if (result.status == TWIN_INVALID_INPUT) {
        RaiseError("InvalidInputError", result.error);
    }
    if (result.status == TWIN_RULE_ERROR) {
        RaiseError("TwinRuleError", run.damage.empty() ? std::string(result.error) : result.error + ("; also " + run.damage));
    }
    if (!run.damage.empty()) {
        RaiseError("TwinRuleError", run.damage);
    }
}

// What a finished launch reports: every core's counters by name, each buffer's first undefined byte
// (None when it has none) and the entry's arity.
py::dict Counters(const KernelLib &lib, const PreparedLaunch &launch, uint32_t block_dim)
{
    py::list names_out;
    for (uint32_t c = 0; c < lib.info.num_counters; ++c) {
        names_out.append(lib.info.counter_names[c]);
    }
    py::list cores;
    for (uint32_t b = 0; b < block_dim; ++b) {
        py::list row;
        for (uint32_t c = 0; c < lib.info.num_counters; ++c) {
            row.append(launch.block.counters[size_t(b) * lib.info.num_counters + c]);
        }
        cores.append(row);
    }
    py::list undefined;  // per buffer: the byte offset of its first undefined byte, or None
    for (size_t i = 0; i < launch.sizes.size(); ++i) {
        const uint8_t *flags = launch.block.gm[i].undefined;
        const void *hit = launch.sizes[i] == 0 ? nullptr : std::memchr(flags, 1, launch.sizes[i]);
        undefined.append(hit == nullptr ? py::object(py::none()) : py::int_(static_cast<const uint8_t *>(hit) - flags));
    }
    py::dict out;
    out["undefined"] = undefined;
    out["counter_names"] = names_out;
    out["cores"] = cores;
    out["entry_arity"] = lib.info.entry_arity;
    return out;
}

// Runs the kernel in `so_path` on `arrays` (C-contiguous, writeable; None = a null GM_ADDR) in a
// launch process (launch_process.h); the kernel's writes land in the arrays. Returns Counters().
py::dict LaunchKernel(const std::string &so_path, const py::list &arrays, const std::vector<std::string> &names,
                      const std::string &soc, uint32_t block_dim, uint64_t tiling_key, uint64_t seed,
                      double timeout_s, const std::vector<double> &model, bool auto_sync)
{
    const KernelLib &lib = Load(so_path);
    PreparedLaunch launch(lib, arrays, names, soc, block_dim, tiling_key, seed, model, auto_sync);
    const RunResult run = Run(launch, so_path, names, timeout_s);
    RaiseOutcome(run, *launch.block.shared, timeout_s);
    return Counters(lib, launch, block_dim);
}

}  // namespace

void BindGmBuffers(py::module_ &m);  // gm_buffer.cpp

void BindLoader(py::module_ &m)
{
    BindGmBuffers(m);
    m.def("launch", &LaunchKernel, py::arg("so_path"), py::arg("arrays"), py::arg("names"), py::arg("soc"),
          py::arg("block_dim"), py::arg("tiling_key"), py::arg("seed"), py::arg("timeout") = 0.0,
          py::arg("model") = std::vector<double>{}, py::arg("auto_sync") = false,
          "Run a kernel .so built by ascendc_twin on NumPy arrays (GM buffers, written back) in a "
          "launch process; timeout in seconds (0: no limit), Ctrl-C stops it too; model: every performance "
          "model constant in model_sources() order, or empty for the SoC's own; auto_sync models bisheng's "
          "--cce-auto-sync (the compiler's own flags between the scalar pipe and the others).");
}
