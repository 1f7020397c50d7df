// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for CANN's platform/soc_spec.h (not in the public asc-devkit/metadef sources): the NPU
// architecture numbers platform_ascendc.h declares opaquely. Only those the tilings built here name:
// dav-c220 (Atlas A2/A3 vector cores, what the twin emulates) and the regbase architectures ops-nn's
// tilings test for.
#pragma once
#include <cstdint>

enum class NpuArch : uint32_t {
    DAV_2201 = 2201,
    DAV_3510 = 3510,
    DAV_5102 = 5102,
    DAV_RESV = 0xFFFF
};
