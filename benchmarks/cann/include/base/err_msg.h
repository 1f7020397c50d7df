// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's base/err_msg.h (not in the public sources): the error-message reporting CANN's
// host macros call beside their log line. CANN sends these to its error manager; the same failures
// already reach the log stand-in (dlog_pub.h, DlogRecord), which the caller reads, so here they add
// nothing, and a message table registered at load time is accepted and not kept.
#pragma once
#include <cstddef>
#include <vector>

#define REPORT_PREDEFINED_ERR_MSG(code, keys, values) ((void)(code), (void)(keys), (void)(values))
#define REPORT_INNER_ERR_MSG(code, fmt, ...) ((void)(code))
#define REPORT_ERR_MSG_CONCAT_(a, b) a##b
#define REPORT_ERR_MSG_CONCAT(a, b) REPORT_ERR_MSG_CONCAT_(a, b)
#define REG_FORMAT_ERROR_MSG(text, length) \
    static const bool REPORT_ERR_MSG_CONCAT(kFormatErrorMsgRegistered, __LINE__) = ((void)(text), (void)(length), true)
