// SPDX-License-Identifier: BSD-3-Clause
// CANN's advanced API (BroadCast, ...), compiled from a fetched asc-devkit checkout, never copied:
// CANN's kernel_operator.h includes it, so the twin's does when the checkout's root is on the
// include path (ascendc-twin's `cann-ut` command and the tests give $ASC_DEVKIT_SRC). Its headers
// reach CANN's basic API through relative paths; the twin is that API, so their include guards are
// taken here and those headers add nothing. Listed: the advanced-API headers known to build on the
// twin (A2 implementations over the twin's basic API).
#pragma once

#define ASCENDC_MODULE_BASIC_INTERFACE_H
#define KERNEL_TENSOR_H

#include "include/adv_api/pad/broadcast.h"
