// SPDX-License-Identifier: BSD-3-Clause
// What the Ascend C compiler provides without a header: the kernel-type keywords, the target
// architecture macro, the block_idx / block_num variables, and InitSocState (the pipe and event
// names at global scope are in kernel_operator.h, after sync.h declares them). The twin emulates an A2/A3 AI vector core (dav-2201).
#pragma once
#include <cstdint>

#include "core.h"

// A2 and A3 are both architecture 2201; kernels branch on it (3510 is Ascend 950).
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201
#endif
// The older architecture macro of the same target (dav-c220), which CANN's kernels still test.
#ifndef __CCE_AICORE__
#define __CCE_AICORE__ 220
#endif

// Every twin core is an AI vector core: __vector__ marks a kernel for it. A __cube__ function is
// placed in its own section, so a launch of one is refused (launch.h) instead of run on a vector core.
#define __vector__
#define __cube__ __attribute__((section("twin_cube_kernels")))
#define __mix__(cube, vec)

// The compiler's per-core variables: each twin core is a thread, so they are thread-local; the
// launcher sets them before the kernel entry runs.
inline thread_local int64_t block_idx = 0;
inline thread_local int64_t block_num = 1;

namespace twin {

extern "C" char __start_twin_cube_kernels[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_twin_cube_kernels[] __attribute__((weak, visibility("hidden")));

// True when the function at `entry` was declared __cube__.
inline bool IsCubeFunction(const void *entry)
{
    const char *p = static_cast<const char *>(entry);
    return __start_twin_cube_kernels != nullptr && p >= __start_twin_cube_kernels && p < __stop_twin_cube_kernels;
}

}  // namespace twin

namespace AscendC {

// The documented A2 initialisation: copies to GM no longer add (atomic off), the mask registers
// back to Normal mode with every lane on.
inline void InitSocState()
{
    twin::CoreState &core = twin::Core();
    core.atomic_dtype = 0;
    core.mask_count_mode = false;
    core.mask[0] = core.mask[1] = ~0ull;
}

}  // namespace AscendC
