// SPDX-License-Identifier: BSD-3-Clause
// Kernel launches run in launch processes: helpers forked from the caller, so that a kernel that
// crashes, hangs or is interrupted ends a helper and never the caller.
//
// Why a process and not the caller's threads: a fault could be caught on a core thread (a signal
// handler and siglongjmp), but a core stopped that way leaves behind whatever it held (a lock, a
// half-updated heap), and a core that loops without calling the twin cannot be stopped at all. A
// process is stopped whole by SIGKILL and takes its state with it.
// Why kept across launches: fork() copies the caller's page tables, 25-30 ms in a process that has
// loaded torch, more than most launches take. A launch process is forked once and then serves
// launches over a socket (tens of microseconds each); a new one is forked only after one was
// stopped. It is forked from a caller that may have threads, so it runs nothing of Python and
// nothing that takes the caller's locks: it loads kernel objects and runs their twin_launch.
// GM buffers, the launch arguments and the results live in the shared arena (gm_arena.h), at the
// same addresses in both processes.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "twin/launch_abi.h"

namespace twin::host {

// What a launch process writes when a fatal signal ends it during a launch.
struct CrashReport {
    std::atomic<int> signal{0};
    int32_t core = -1;  // the core whose thread took the signal; -1 when not known
    int32_t code = 0;   // si_code
    uint64_t address = 0;
};

// The part of a launch both processes see (in arena memory).
struct SharedLaunch {
    TwinLaunchArgs args;
    TwinLaunchResult result;
    CrashReport crash;
};

// TwinLaunchResult.status when the launch process could not load the kernel object.
constexpr int kNotLoaded = -1;

enum class LaunchEnd { kFinished, kCrashed, kTimedOut, kInterrupted };

struct LaunchOutcome {
    LaunchEnd end = LaunchEnd::kFinished;
    int signal = 0;       // kCrashed: the signal that ended the launch process (0: it exited)
    int exit_status = 0;  // kCrashed without a signal: its exit status
};

// Runs the twin_launch of `so_path` on `shared` in a launch process and waits for it: at most
// `timeout_s` seconds (<= 0: no limit), asking `interrupted()` every 50 ms whether the caller
// wants it stopped (Ctrl-C). A launch that does not finish is stopped with its process.
LaunchOutcome RunInLaunchProcess(const std::string &so_path, SharedLaunch *shared, double timeout_s,
                                 bool (*interrupted)());

}  // namespace twin::host
