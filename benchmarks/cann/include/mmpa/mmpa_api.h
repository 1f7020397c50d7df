// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's mmpa/mmpa_api.h (its closed OS-abstraction library): the few calls CANN's
// public host headers built here name, as the POSIX calls they wrap on Linux.
#pragma once
#include <dlfcn.h>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define EN_OK 0
#define EN_ERROR (-1)
#define MMPA_MAX_PATH PATH_MAX

typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
    size_t dli_size;
    int32_t dli_bind;
    int32_t dli_type;
} mmDlInfo;

inline int32_t mmDladdr(void *addr, mmDlInfo *info)
{
    Dl_info found;
    if (info == nullptr || dladdr(addr, &found) == 0) {
        return EN_ERROR;
    }
    info->dli_fname = found.dli_fname;
    info->dli_fbase = found.dli_fbase;
    info->dli_sname = found.dli_sname;
    info->dli_saddr = found.dli_saddr;
    return EN_OK;
}

inline char *mmDlerror() { return dlerror(); }

inline int32_t mmGetErrorCode() { return errno; }

inline char *mmGetErrorFormatMessage(int32_t code, char *buf, size_t size)
{
    if (buf == nullptr || size == 0) {
        return nullptr;
    }
    std::strncpy(buf, std::strerror(code), size - 1);
    buf[size - 1] = '\0';
    return buf;
}

inline int32_t mmRealPath(const char *path, char *real_path, int32_t real_path_len)
{
    if (path == nullptr || real_path == nullptr || real_path_len < PATH_MAX) {
        return EN_ERROR;
    }
    return realpath(path, real_path) == nullptr ? EN_ERROR : EN_OK;
}
