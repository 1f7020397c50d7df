// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's generated kernel_tiling/kernel_tiling.h, which op tiling headers include
// first: the fixed-width integer types a tiling struct is made of. The advanced API's own tiling
// structs are not declared here; a kernel that needs one fails to compile, naming it.
#pragma once
#include <cstdint>
