// SPDX-License-Identifier: BSD-3-Clause
// The CPU twin of the Ascend C API: the one header an unmodified Ascend C kernel includes.
// Written from the public API documentation's semantics; no CANN code or header is used.
// Each API family lives in twin/<family>.h; this file adds the kernel-entry macros and the
// launch-level queries (block index, tiling, workspace).
#pragma once
#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>
// CANN's headers bring the POSIX declarations into every kernel compiled in CPU-debug mode, so a
// kernel entry or helper reusing one of their names (sync, read, ...) fails there: fail here too.
#include <unistd.h>

#include "twin/core.h"
#include "twin/builtins.h"
#include "twin/core_type.h"
#include "twin/debug.h"
#include "twin/memory.h"
#include "twin/launch.h"
#include "twin/types.h"
#include "twin/tpipe.h"
#include "twin/queues.h"
#include "twin/tbuf.h"
#include "twin/data_copy.h"
#include "twin/data_copy_slice.h"
#include "twin/vector.h"
#include "twin/reduce.h"
#include "twin/reduce_minmax.h"
#include "twin/reduce_typed.h"
#include "twin/gather.h"
#include "twin/sort.h"
#include "twin/cast.h"
#include "twin/sync.h"
#include "twin/local_alloc.h"
#include "twin/compare_select.h"
#include "twin/utils.h"
#include "twin/block_sync.h"
#include "twin/ub_copy.h"
#include "twin/transpose.h"
#include "twin/constants.h"
#include "twin/reg_others.h"
#include "twin/stack_buffer.h"

// CANN's CPU-debug build (what the twin is) defines __CCE_KT_TEST__: kernels test it to leave out
// their <<<>>> launch helpers and to add host-side asserts.
#ifndef __CCE_KT_TEST__
#define __CCE_KT_TEST__ 1
#endif

// Address-space and function qualifiers of the Ascend C compiler: nothing on the CPU.
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define GM_ADDR __gm__ uint8_t *

// Branch hints of CANN's kernel headers: the condition itself, hinted to g++.
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

// Kernel type declarations of newer kernels; every twin core is a vector core (core_type.h).
#define KERNEL_TASK_TYPE_DEFAULT(type)

namespace twin {

// The tiling struct arrives in GM like any other argument: reading it is bounds-checked.
template <typename T>
void LoadTiling(T *dst, const uint8_t *tiling, const char *call)
{
    static_assert(std::is_trivially_copyable_v<T>, "the tiling data must be a plain struct");
    CheckGm(call, tiling, sizeof(T));
    std::memcpy(static_cast<void *>(dst), tiling, sizeof(T));
}

}  // namespace twin

#define GET_TILING_DATA_WITH_STRUCT(Type, var, tiling) \
    Type var;                                          \
    ::twin::LoadTiling(&var, (tiling), "GET_TILING_DATA_WITH_STRUCT")

// CANN resolves the struct from the op's registered tiling definition; the twin has no registry,
// so GET_TILING_DATA reads the type named by TWIN_TILING_STRUCT, which the kernel (or a -D, e.g.
// run_kernel(defines={"TWIN_TILING_STRUCT": "MyTilingData"})) defines before using the macro.
// A CANN kernel UT's tiling header (included before this one) defines its own GET_TILING_DATA,
// which reads the struct it declares: that one stays.
#ifndef GET_TILING_DATA
#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT(TWIN_TILING_STRUCT, var, tiling)
#endif

#define TILING_KEY_IS(key) (::twin::Launch().tiling_key == static_cast<uint64_t>(key))

// CANN's compiler declares the pipe and event enumerators at global scope; the twin's live in
// AscendC (sync.h), so kernels name them either way.
using AscendC::pipe_t;
using AscendC::PIPE_S;
using AscendC::PIPE_V;
using AscendC::PIPE_M;
using AscendC::PIPE_MTE1;
using AscendC::PIPE_MTE2;
using AscendC::PIPE_MTE3;
using AscendC::PIPE_ALL;
using AscendC::PIPE_V2;
using AscendC::PIPE_FIX;
using AscendC::event_t;
using AscendC::EVENT_ID0;
using AscendC::EVENT_ID1;
using AscendC::EVENT_ID2;
using AscendC::EVENT_ID3;
using AscendC::EVENT_ID4;
using AscendC::EVENT_ID5;
using AscendC::EVENT_ID6;
using AscendC::EVENT_ID7;
using AscendC::GetTPipePtr;

namespace AscendC {

inline int64_t GetBlockIdx() { return twin::Core().block_idx; }
inline int64_t GetBlockNum() { return twin::Core().block_num; }

}  // namespace AscendC

namespace twin {

// False in CANN's CPU-debug launches (tikicpulib.h's ICPU_RUN_KF), whose workspace argument is the
// user part alone: there GetUserWorkspace returns it unchanged, as CANN's CPU-debug build does.
inline bool g_workspace_has_sys_part = true;

}  // namespace twin

namespace AscendC {

// The workspace starts with the SoC's system part (sys_workspace_bytes in twin/platform.h); the
// kernel's own part follows it. A null workspace stays null, as on the NPU. A function, as in
// CANN, so kernels call it as AscendC::GetUserWorkspace(...) or unqualified.
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace)
{
    if (workspace == nullptr || !twin::g_workspace_has_sys_part) {
        return workspace;
    }
    const uint64_t sys = twin::Core().soc->sys_workspace_bytes;
    twin::CheckGm("GetUserWorkspace", workspace, sys);
    return workspace + sys;
}

}  // namespace AscendC

using AscendC::GetUserWorkspace;

#if __has_include("include/adv_api/pad/broadcast.h")
#include "twin/adv_api.h"
#endif
