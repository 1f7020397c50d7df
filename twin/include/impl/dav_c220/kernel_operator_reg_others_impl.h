// SPDX-License-Identifier: BSD-3-Clause
// CANN kernels include this internal header of the A2 (dav-c220) implementation for the register
// helpers it declares (GetAccVal, AscendCUtils::SetMask, ...). The twin declares them with the rest
// of the API in kernel_operator.h, so the path only has to exist.
#pragma once
#include "kernel_operator.h"
