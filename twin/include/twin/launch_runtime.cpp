// SPDX-License-Identifier: BSD-3-Clause
// What the twin runs for every kernel alike, compiled once: the launcher of launch.h (LaunchErased:
// block_dim cores as threads, each running the entry with its own CoreState, then the launch's
// verdict, the first rule error or the GM order check of all cores' accesses) and the L2 model's
// walk over a copy's lines (L2Model::Touch, timeline_memory.h). The twin compiles this file once per
// header set, flags and defines, and links the object into every kernel object, where it shares the
// kernel's one copy of the twin's state; a kernel's compile then emits its own code, not this.
#include "kernel_operator.h"

namespace twin {
namespace {

void RunCore(ErasedEntry entry, EntryCaller call, const TwinLaunchArgs &args, LaunchState &launch, uint32_t idx)
{
    CoreState core(*launch.soc, idx, launch.block_num);
    core.launch = &launch;
    core.timeline.Attach(&launch.timeline, idx);
    g_core = &core;
    ::block_idx = idx;
    ::block_num = launch.block_num;
    bool failed = true;
    try {
        call(entry, args.gm);
        if (core.deferred_error.empty()) {
            failed = false;
        } else {
            launch.Report(core.deferred_error);
        }
    } catch (const LaunchAborted &) {
    } catch (const RuleError &e) {
        launch.Report(e.what());
    } catch (const std::exception &e) {
        launch.Report(Cat("core ", idx, ": the kernel threw an exception (", e.what(), ")"));
    } catch (...) {
        launch.Report(Cat("core ", idx, ": the kernel threw an exception that is not a std::exception"));
    }
    launch.timeline.Done(idx);
    if (!failed) {
        launch.CoreReturned(idx);
    }
    launch.gm_logs[idx] = std::move(core.gm_log);
    if (args.counters != nullptr) {
        StoreTimeline(core);
        StoreCounters(core.counters, args.counters + uint64_t(idx) * kNumCounters);
    }
    g_core = nullptr;
}

int SetResult(TwinLaunchResult &result, int status, const std::string &message)
{
    result.status = status;
    const size_t n = std::min(message.size(), size_t(TWIN_ERROR_BYTES - 1));
    std::memcpy(result.error, message.data(), n);
    result.error[n] = '\0';
    return status;
}

}  // namespace

L2Model::Split L2Model::Touch(const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, bool write)
{
    Split s;
    const uint64_t base = reinterpret_cast<uintptr_t>(gm);
    for (uint32_t i = 0; i < blocks && len > 0; ++i) {
        TouchRange(base + i * pitch, base + i * pitch + len, write, s);
    }
    return s;
}

int LaunchErased(ErasedEntry entry, EntryCaller call, uint32_t arity, const TwinLaunchArgs &args,
                 TwinLaunchResult &result)
{
    if (args.abi_version != TWIN_ABI_VERSION) {
        return SetResult(result, TWIN_INVALID_INPUT,
                         Cat("the kernel was built for twin ABI ", TWIN_ABI_VERSION, ", the loader speaks ",
                             args.abi_version, "; rebuild the extension"));
    }
    const SocInfo *soc = FindSoc(args.soc);
    if (soc == nullptr) {
        return SetResult(result, TWIN_INVALID_INPUT, Cat("soc '", args.soc, "' is not a supported SoC"));
    }
    if (args.block_dim < 1 || args.block_dim > soc->vector_cores) {
        return SetResult(result, TWIN_INVALID_INPUT,
                         Cat("block_dim must be between 1 and ", soc->vector_cores, " on ", soc->name, " (got ",
                             args.block_dim, ")"));
    }
    if (IsCubeFunction(reinterpret_cast<const void *>(entry))) {
        return SetResult(result, TWIN_INVALID_INPUT,
                         "the kernel entry is declared __cube__: the twin emulates AI vector cores only, so a cube "
                         "kernel (Mmad, LoadData, Fixpipe, L0 buffers) needs an NPU; declare vector kernels __vector__");
    }
    if (args.num_gm != arity) {
        return SetResult(result, TWIN_INVALID_INPUT,
                         Cat("the kernel entry takes ", arity, " GM_ADDR arguments but ", args.num_gm,
                             " buffers were passed"));
    }
    LaunchState launch;
    launch.soc = soc;
    launch.block_num = args.block_dim;
    launch.tiling_key = args.tiling_key;
    launch.seed = args.seed;
    launch.auto_sync = args.auto_sync != 0;
    if (args.num_model != 0 && args.num_model != std::size(kModelFields)) {
        return SetResult(result, TWIN_INVALID_INPUT,
                         Cat("model constants must be all ", std::size(kModelFields),
                             " of model_constants.h's kModelFields (got ", args.num_model, ")"));
    }
    const ModelConstants &table = FindModel(soc->name);
    launch.timeline.Init(*soc, args.num_model != 0 ? WithValues(table, args.model) : table, args.block_dim);
    for (uint32_t i = 0; i < args.num_gm; ++i) {
        launch.regions.push_back(
            {static_cast<uint8_t *>(args.gm[i].data), args.gm[i].bytes, args.gm[i].name, args.gm[i].undefined});
    }
    launch.gm_logs.resize(args.block_dim);
    std::vector<std::thread> cores;
    for (uint32_t i = 0; i < args.block_dim; ++i) {
        cores.emplace_back([&, i] { RunCore(entry, call, args, launch, i); });
    }
    for (std::thread &t : cores) {
        t.join();
    }
    if (!launch.FirstError().empty()) {
        return SetResult(result, TWIN_RULE_ERROR, launch.FirstError());
    }
    const std::string order = CheckGmOrder(launch.gm_logs, [&](uint64_t at) { return DescribeGm(launch, at); });
    return SetResult(result, order.empty() ? TWIN_OK : TWIN_RULE_ERROR, order);
}

}  // namespace twin
