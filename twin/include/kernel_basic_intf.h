// SPDX-License-Identifier: BSD-3-Clause
// CANN's advanced-API headers (asc-devkit include/adv_api, compiled from a fetched checkout) include
// the basic API under this name; on the twin the basic API is kernel_operator.h.
#pragma once
#include "kernel_operator.h"
