// The tiling data of RmsNormBackward: one plain struct shared by the host tiling (op_host/tiling),
// the kernel (GET_TILING_DATA_WITH_STRUCT) and the CPU twin. Fixed-width fields only, no pointers,
// so the bytes the host writes are the bytes the kernel reads on any compiler.
#pragma once
#include <cstdint>

// tiling key = path * kTilingKeyPathStep + dtype: one kernel source, one instantiation per pair.
enum class RmsNormBackwardDtype : uint32_t { kFloat32 = 0, kFloat16 = 1, kBfloat16 = 2 };

enum class RmsNormBackwardTilingKey : uint32_t {
    kRowsInUbFp32 = 100, kRowsInUbFp16 = 101, kRowsInUbBf16 = 102,    // several whole rows per tile
    kLongRowsFp32 = 200, kLongRowsFp16 = 201, kLongRowsBf16 = 202,    // one row at a time, widened in chunks
    kSmallColsFp32 = 300, kSmallColsFp16 = 301, kSmallColsBf16 = 302,  // many packed rows per instruction
};
inline constexpr uint32_t kTilingKeyPathStep = 100;
// Long rows kept whole in a ring of chunk slots (row_buffers = 1): at most this many slots per tensor.
inline constexpr uint32_t kMaxRowSlots = 16;
// Long rows kept whole in row buffers: at most this many (the next rows stream in while one is computed).
inline constexpr uint32_t kMaxRowBuffers = 3;
// Long rows: rstd values fetched per copy.
inline constexpr uint32_t kRstdBatchRows = 64;

struct RmsNormBackwardTilingData {
    uint64_t rows;           // prod(x.shape) / cols
    uint32_t cols;           // prod(gamma.shape): the normalised row
    uint32_t dtype;          // RmsNormBackwardDtype of dy, x, gamma, dx
    uint32_t row_stride;     // UB elements between rows of one tile (cols rounded up to 32 bytes of the dtype)
    uint32_t groups;         // dgamma row groups G: chosen from the shape only, never from the block dim
    uint32_t tile_rows;      // rows per tile (rows-in-UB, small cols); 1 for long rows
    uint32_t chunk_cols;     // long rows: fp32 work chunk; rows-in-UB / small cols: row_stride
    uint32_t resident_cols;  // long rows: leading cols of dy and x kept in UB (== cols: the whole row)
    uint32_t gamma_resident_cols;  // long rows: leading cols of gamma and the dgamma accumulator kept in UB
    uint32_t row_buffers;    // long rows kept whole: 2 or 3 row buffers; 1 = a ring of chunk slots
    uint32_t dx_over_dy;     // long rows ring: 1 = dx is written over dy's slot (UB too tight for a dx queue)
    uint32_t partial_stride; // fp32 elements between group partials of dgamma in the workspace
    uint32_t reduce_chunk;   // fp32 elements per step of the final dgamma reduction
    float inv_cols;          // 1 / cols, for the row mean
};
