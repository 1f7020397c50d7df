// SPDX-License-Identifier: BSD-3-Clause
// The C interface between a compiled kernel shared object and its loader (the _twin extension).
// Plain C structs only: the kernel .so and the extension are built separately, so nothing with a
// C++ layout crosses this boundary. Bump TWIN_ABI_VERSION whenever a struct here changes.
#pragma once
#include <stdint.h>

#define TWIN_ABI_VERSION 4
#define TWIN_ERROR_BYTES 8192

#ifdef __cplusplus
extern "C" {
#endif

// One GM buffer handed to the kernel entry, in argument order.
typedef struct TwinGmArg {
    void *data;
    uint64_t bytes;
    const char *name;  // for messages: the argument's name as the caller knows it
    // `bytes` flags, zeroed by the caller: the launch sets a byte's flag to 1 when the last copy to
    // it carried UB bytes nothing wrote (the NPU copies whatever the UB held), 0 when defined.
    uint8_t *undefined;
} TwinGmArg;

typedef struct TwinLaunchArgs {
    uint32_t abi_version;
    const char *soc;      // SoC version string, e.g. "Ascend910B2" (twin/platform.h)
    uint32_t block_dim;
    uint64_t tiling_key;  // what TILING_KEY_IS compares with
    uint64_t seed;        // for whatever the twin randomises (e.g. the order of atomic adds)
    uint32_t num_gm;
    const TwinGmArg *gm;
    uint64_t *counters;   // block_dim x TwinKernelInfo.num_counters, filled by the launch
    uint32_t num_model;   // 0: the SoC's performance model constants, else every one of them
    const double *model;  // num_model values in twin::kModelFields order (model_constants.h)
    uint32_t auto_sync;   // nonzero: bisheng's --cce-auto-sync, the compiler orders PIPE_S with the others
} TwinLaunchArgs;

enum TwinStatus { TWIN_OK = 0, TWIN_RULE_ERROR = 1, TWIN_INVALID_INPUT = 2 };

typedef struct TwinLaunchResult {
    int status;                    // TwinStatus
    char error[TWIN_ERROR_BYTES];  // the first error, NUL-terminated (may be cut short)
} TwinLaunchResult;

typedef struct TwinKernelInfo {
    uint32_t abi_version;
    uint32_t entry_arity;           // GM_ADDR parameters of the kernel entry
    uint32_t num_counters;
    const char *const *counter_names;  // twin::Counters fields, in order
} TwinKernelInfo;

// Exported by every kernel shared object (see TWIN_DEFINE_LAUNCH in launch.h).
typedef void (*TwinKernelInfoFn)(TwinKernelInfo *info);
typedef int (*TwinLaunchFn)(const TwinLaunchArgs *args, TwinLaunchResult *result);
// The block index of the core running on the calling thread, -1 off the cores; async-signal-safe
// once the thread has called it (the loader's crash handler asks it which core took a signal).
typedef int (*TwinCurrentCoreFn)(void);

#ifdef __cplusplus
}
#endif
