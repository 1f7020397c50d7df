// SPDX-License-Identifier: BSD-3-Clause
// The memory every GM buffer of the twin comes from: one shared mapping, reserved before the first
// launch process is forked (launch_process.h), so a buffer has the same address in the caller and
// in the process that runs the kernel, and the kernel's writes land in the caller's memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace twin::host {

// Reserves the shared mapping if that has not happened yet (call before forking).
void ArenaReserve();
// `bytes` (a multiple of 4096) of page-aligned shared memory; std::bad_alloc when the reservation
// is exhausted.
uint8_t *ArenaTake(size_t bytes);
// Returns memory from ArenaTake; its pages go back to the system.
void ArenaGive(uint8_t *p, size_t bytes);

// True on the thread that forks a launch process, around the fork: that child keeps sharing the
// arena. Any other fork (os.fork, a fork-started DataLoader worker) gives the child a private
// copy of the buffers in use, as fork() does for ordinary memory.
extern thread_local bool t_forking_launch_process;

}  // namespace twin::host
