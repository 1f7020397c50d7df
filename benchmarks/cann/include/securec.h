// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for the bounds-checked C functions (securec.h) CANN's host code calls: the ones the
// sources built here use, with their documented contract (refuse a null pointer or a copy larger than
// the destination, return 0 on success).
#pragma once
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

typedef int errno_t;
#ifndef EOK
#define EOK 0
#endif

inline errno_t memcpy_s(void *dest, size_t dest_max, const void *src, size_t count)
{
    if (dest == nullptr || src == nullptr || count > dest_max) {
        return 1;
    }
    std::memcpy(dest, src, count);
    return EOK;
}

inline errno_t memset_s(void *dest, size_t dest_max, int c, size_t count)
{
    if (dest == nullptr || count > dest_max) {
        return 1;
    }
    std::memset(dest, c, count);
    return EOK;
}

// Writes at most dest_max - 1 characters and the terminator; -1 when the text did not fit.
inline int vsnprintf_s(char *dest, size_t dest_max, size_t count, const char *format, va_list args)
{
    if (dest == nullptr || dest_max == 0) {
        return -1;
    }
    const size_t limit = count < dest_max - 1 ? count + 1 : dest_max;
    const int written = std::vsnprintf(dest, limit, format, args);
    return (written < 0 || static_cast<size_t>(written) >= limit) ? -1 : written;
}
