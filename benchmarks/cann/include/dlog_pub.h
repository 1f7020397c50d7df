// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's dlog_pub.h (the closed slog library's header): the log levels, module ids and
// calls CANN's host sources log through. Every record goes to DlogRecord, which cann_host.cpp
// implements: it keeps the errors of the current tiling call for its caller and drops the rest.
#pragma once
#include <cstdint>

#ifndef DLOG_DEBUG
#define DLOG_DEBUG 0
#endif
#ifndef DLOG_INFO
#define DLOG_INFO 1
#endif
#ifndef DLOG_WARN
#define DLOG_WARN 2
#endif
#ifndef DLOG_ERROR
#define DLOG_ERROR 3
#endif
#define RUN_LOG_MASK 0x01000000

enum { SLOG = 0, FE = 6, GE = 45, ASCENDCKERNEL = 57, OP = 63 };

#ifdef __cplusplus
extern "C" {
#endif
int32_t CheckLogLevel(int32_t moduleId, int32_t logLevel);
void DlogRecord(int32_t moduleId, int32_t level, const char *fmt, ...);
#ifdef __cplusplus
}
#endif

#define dlog_error(moduleId, fmt, ...) DlogRecord(moduleId, DLOG_ERROR, fmt, ##__VA_ARGS__)
#define dlog_warn(moduleId, fmt, ...) DlogRecord(moduleId, DLOG_WARN, fmt, ##__VA_ARGS__)
#define dlog_info(moduleId, fmt, ...) DlogRecord(moduleId, DLOG_INFO, fmt, ##__VA_ARGS__)
#define dlog_debug(moduleId, fmt, ...) DlogRecord(moduleId, DLOG_DEBUG, fmt, ##__VA_ARGS__)
