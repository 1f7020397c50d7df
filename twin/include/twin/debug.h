// SPDX-License-Identifier: BSD-3-Clause
// Kernel assertions and logs of CANN's kernels and samples: ascendc_assert(cond[, fmt, args...]),
// and the ASCENDC_ASSERT(cond, { KERNEL_LOG(level, fmt, args...); }) / KERNEL_LOG pair CANN's own
// headers use. In CANN's CPU-debug build a failed assertion prints its message and aborts the
// process (on the NPU ascendc_assert stops the kernel the same way): on the twin it is the rule
// error of the launch, with the condition and the formatted message.
#pragma once
#include <cassert>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "core.h"

namespace twin {

// The text of the last KERNEL_LOG on this core, which ASCENDC_ASSERT puts in its error.
inline std::string &LastKernelLog()
{
    static thread_local std::string text;
    return text;
}

inline std::string Format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string Format(const char *fmt, ...)
{
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    return buf;
}

inline std::string Format() { return {}; }

enum KernelLogLevel { KERNEL_DEBUG, KERNEL_INFO, KERNEL_WARN, KERNEL_ERROR };

[[noreturn]] inline void AssertFailed(const char *call, const char *cond, const std::string &message)
{
    std::string text = message;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.pop_back();
    }
    Fail(call, Cat("the assertion (", cond, ") failed", text.empty() ? "" : ": ", text));
}

}  // namespace twin

using twin::KERNEL_DEBUG;
using twin::KERNEL_INFO;
using twin::KERNEL_WARN;
using twin::KERNEL_ERROR;

#define KERNEL_LOG(level, ...) (void)(::twin::LastKernelLog() = ::twin::Format(__VA_ARGS__), (level))

#define ASCENDC_ASSERT(cond, behavior)                                               \
    do {                                                                             \
        if (!(cond)) {                                                               \
            ::twin::LastKernelLog().clear();                                         \
            behavior;                                                                \
            ::twin::AssertFailed("ASCENDC_ASSERT", #cond, ::twin::LastKernelLog()); \
        }                                                                            \
    } while (0)

// CANN's ASSERT(x): the C assert.
#ifndef ASSERT
#define ASSERT(x) assert(x)
#endif

// A check CANN's CPU-debug build makes and the NPU build leaves out: the twin makes it too.
#define ASCENDC_DEBUG_ASSERT(cond, behavior) ASCENDC_ASSERT(cond, behavior)
#define ASCENDC_ASSERT_WARNING(cond, behavior) \
    do {                                       \
        if (!(cond)) {                         \
            behavior;                          \
        }                                      \
    } while (0)

#define ascendc_assert(cond, ...)                                                             \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            ::twin::AssertFailed("ascendc_assert", #cond, ::twin::Format(__VA_ARGS__));     \
        }                                                                                     \
    } while (0)

// Profiling marks around CANN's advanced-API calls (TRACE_START(TraceId::...)): they time nothing
// the twin models, and their argument is never evaluated.
#define TRACE_START(...) ((void)0)
#define TRACE_STOP(...) ((void)0)
