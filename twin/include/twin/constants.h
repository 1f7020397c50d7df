// SPDX-License-Identifier: BSD-3-Clause
// The named constants of the Ascend C API that kernels and CANN's advanced API use (sizes of the
// A2 vector core's data block and repeat, the repeat-count limit, the default strides), each the
// documented value on dav-2201 and tied to the twin's own where the twin has one.
#pragma once
#include <cstdint>

#include "core.h"

namespace AscendC {

constexpr uint16_t ONE_BLK_SIZE = 32;          // bytes of a data block: UB addresses and copies align to it
constexpr uint32_t ONE_BLOCK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;  // bytes one vector repeat reads per operand
constexpr int32_t DEFAULT_BLOCK_SIZE = 256;
constexpr int32_t DEFAULT_C0_SIZE = 32;
constexpr int32_t DEFAULT_BLK_NUM = 8;         // data blocks per repeat
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;   // blocks between repeats of contiguous data
constexpr uint8_t HALF_DEFAULT_REPEAT_STRIDE = 4;
constexpr uint8_t ONE_FOURTH_DEFAULT_REPEAT_STRIDE = 2;
constexpr int32_t MAX_REPEAT_TIMES = 255;      // the 8-bit repeat field of a vector instruction
constexpr uint64_t FULL_MASK = 0xffffffffffffffffULL;
constexpr int32_t ONE_BYTE_BIT_SIZE = 8;
constexpr int32_t MIN_BLOCK_LEN = 1;
constexpr uint8_t B64_BYTE_SIZE = 8;
constexpr uint8_t B32_BYTE_SIZE = 4;
constexpr uint8_t B16_BYTE_SIZE = 2;
constexpr uint8_t B8_BYTE_SIZE = 1;

static_assert(ONE_BLK_SIZE == twin::kUbBlockBytes && ONE_REPEAT_BYTE_SIZE == int32_t(twin::kRepeatBytes),
              "the API's block and repeat sizes are the twin's");

}  // namespace AscendC
