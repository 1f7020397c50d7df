// SPDX-License-Identifier: BSD-3-Clause
// The anchor: a model of ops-nn's A2 RmsNormGrad schedule (norm/rms_norm_grad, the *_high_precision.h
// kernels), written here as our own code so that it runs on the same twin and timeline as our
// kernel. ANCHOR.md beside it lists every schedule feature with the ops-nn line it follows and every
// simplification. This header holds what both paths share: the tiling, a core's rows, the event
// handshakes, the zeroing of a GM range, the halving row sum and the deterministic final sum.
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

namespace rmsnorm_backward::anchor {

// Filled by rmsnorm_backward.perf.anchor.host (field order and types must match its TILING_FORMAT).
struct AnchorTiling {
    uint64_t rows;
    uint32_t cols;
    uint32_t colAlign;       // cols rounded up to 32 bytes of the data type (8 fp32, 16 half)
    uint32_t blockDim;       // ceil(rows / blockFactor)
    uint32_t blockFactor;    // ceil(rows / cores): rows of every core but the last
    uint32_t coreTail;       // rows of the last core when they differ from blockFactor, else 0
    uint32_t ubFactor;       // split-N: rows per UB loop; split-D: columns per chunk
    uint32_t deterministic;  // 0: dgamma by atomic adds; 1: a workspace row per core and a final sum
    uint32_t rstdLen;        // split-N: the rstd buffer's floats (ubFactor rounded up to the alignment)
    float avgFactor;         // 1 / cols
};

enum class AnchorPath : uint32_t { kSplitN = 0, kSplitD = 1 };
constexpr uint32_t kDtypes = 3;  // tiling key = path * kDtypes + dtype index (fp32, fp16, bf16)

constexpr uint32_t kFloatsPerRepeat = 64;
constexpr uint32_t kFloatsPerBlock = 8;
constexpr uint32_t kMaxRepeats = 255;
constexpr uint32_t kSmallDCols = 640;       // split-N computes whole tiles at colAlign <= this
constexpr uint32_t kGroupRows = 32;         // split-D: rows whose row sums are kept at once
constexpr uint32_t kTaskCols = 64;          // deterministic final sum: columns per task
constexpr uint32_t kZeroFloats = 2040;      // InitOutput's largest single copy: 255 blocks of fp32

template <typename T>
constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

__aicore__ inline uint32_t RoundUp(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }
__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

// A core's first row and row count: every core blockFactor rows, the last one coreTail when set.
struct CoreRows {
    uint64_t first;
    uint32_t count;
};
__aicore__ inline CoreRows RowsOf(const AnchorTiling &t)
{
    const uint32_t b = GetBlockIdx();
    const bool tail = t.coreTail != 0 && b == t.blockDim - 1;
    return {uint64_t(b) * t.blockFactor, tail ? t.coreTail : t.blockFactor};
}

// SetFlag then WaitFlag of one event: the consumer pipe waits for everything before on the producer.
template <HardEvent event>
__aicore__ inline void Handshake()
{
    const event_t id = static_cast<event_t>(GetTPipePtr()->FetchEventID(event));
    SetFlag<event>(id);
    WaitFlag<event>(id);
}

// GM [0, count) of `gm` set to zero as the framework's InitOutput does it: one Duplicate of up to
// kZeroFloats into UB (`zeros`), the V -> MTE3 handshake, then copies of at most kZeroFloats.
__aicore__ inline void ZeroGm(const GlobalTensor<float> &gm, uint32_t count, const LocalTensor<float> &zeros)
{
    const uint32_t width = Min(count, kZeroFloats);
    Duplicate(zeros, 0.0f, width);
    Handshake<HardEvent::V_MTE3>();
    for (uint32_t at = 0; at < count; at += width) {
        DataCopyPad(gm[at], zeros, DataCopyExtParams(1, Min(width, count - at) * sizeof(float), 0, 0, 0));
    }
}

// Sum of `count` fp32 values, destroying them: fold the part past the largest power of two, halve
// down to one repeat, one WholeReduceSum into the values' first element, which the scalar unit reads
// after the V -> S handshake. Every Add is followed by a vector barrier.
__aicore__ inline float HalvingSum(const LocalTensor<float> &values, uint32_t count)
{
    uint32_t width = count;
    if (count > kFloatsPerRepeat) {
        width = 1;
        while (width * 2 <= count) {
            width *= 2;
        }
        if (count > width) {
            Add(values, values, values[width], count - width);
            PipeBarrier<PIPE_V>();
        }
        while (width > kFloatsPerRepeat) {
            width /= 2;
            Add(values, values, values[width], width);
            PipeBarrier<PIPE_V>();
        }
    }
    WholeReduceSum(values, values, int32_t(width), 1, 1, 1, 8);
    Handshake<HardEvent::V_S>();
    return values.GetValue(0);
}

// Deterministic dgamma, after every core's fp32 row landed in the workspace (rows `wsStride` floats
// apart) and a SyncAll: 64-column tasks dealt round-robin over the cores; per task the blockDim rows
// are loaded at once (UB rows 64 floats apart) and summed by one Add of blockDim repeats into an
// accumulator of one repeat, in core order.
__aicore__ inline void FinalSum(const AnchorTiling &t, const GlobalTensor<float> &workspace,
                                const GlobalTensor<float> &dgamma, const LocalTensor<float> &rows,
                                const LocalTensor<float> &acc)
{
    const uint32_t tasks = (t.colAlign + kTaskCols - 1) / kTaskCols;
    for (uint32_t task = GetBlockIdx(); task < tasks; task += t.blockDim) {
        const uint32_t col = task * kTaskCols;
        const uint32_t width = task == tasks - 1 ? t.cols - col : kTaskCols;
        Handshake<HardEvent::V_MTE2>();
        DataCopyPad(rows, workspace[col],
                    DataCopyExtParams(uint16_t(t.blockDim), width * sizeof(float), (t.colAlign - width) * sizeof(float),
                                      (kTaskCols - RoundUp(width, kFloatsPerBlock)) / kFloatsPerBlock, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        Handshake<HardEvent::MTE2_V>();
        Handshake<HardEvent::MTE3_V>();
        Duplicate(acc, 0.0f, kTaskCols);
        PipeBarrier<PIPE_V>();
        for (uint32_t first = 0; first < t.blockDim; first += kMaxRepeats) {
            const uint32_t n = Min(kMaxRepeats, t.blockDim - first);
            Add(acc, rows[first * kTaskCols], acc, uint64_t(width), uint8_t(n), BinaryRepeatParams(1, 1, 1, 0, 8, 0));
            PipeBarrier<PIPE_V>();
        }
        Handshake<HardEvent::V_MTE3>();
        DataCopyPad(dgamma[col], acc, DataCopyExtParams(1, width * sizeof(float), 0, 0, 0));
    }
}

// The operator's tensors in GM from this core's first row on, and dgamma's destination.
template <typename T>
struct AnchorGm {
    GlobalTensor<T> dy, x, dx, gamma;
    GlobalTensor<float> rstd, dgamma, workspace, ownRow;

    __aicore__ inline void Init(GM_ADDR dyAddr, GM_ADDR xAddr, GM_ADDR rstdAddr, GM_ADDR gammaAddr, GM_ADDR dxAddr,
                                GM_ADDR dgammaAddr, GM_ADDR ws, const AnchorTiling &t, const CoreRows &mine)
    {
        const uint64_t at = mine.first * t.cols, len = uint64_t(mine.count) * t.cols;
        dy.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dyAddr) + at, len);
        x.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(xAddr) + at, len);
        dx.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dxAddr) + at, len);
        rstd.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(rstdAddr) + mine.first, mine.count);
        gamma.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(gammaAddr), t.cols);
        dgamma.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dgammaAddr), t.cols);
        if (t.deterministic) {
            auto *base = reinterpret_cast<__gm__ float *>(GetUserWorkspace(ws));
            workspace.SetGlobalBuffer(base, uint64_t(t.blockDim) * t.colAlign);
            ownRow.SetGlobalBuffer(base + uint64_t(GetBlockIdx()) * t.colAlign, t.colAlign);
        }
    }
};

// Casts 16-bit data loaded into the upper half of an fp32 buffer to fp32 in place (no-op for fp32).
template <typename T>
__aicore__ inline void Widen(const LocalTensor<float> &buffer, uint32_t halfOffset, uint32_t count)
{
    if constexpr (!IsFloat<T>()) {
        Cast(buffer, buffer.ReinterpretCast<T>()[halfOffset], RoundMode::CAST_NONE, count);
        PipeBarrier<PIPE_V>();
    }
}

// Rounds fp32 dx to T in place at the buffer's start (no-op for fp32).
template <typename T>
__aicore__ inline void Narrow(const LocalTensor<float> &dx, uint32_t count)
{
    if constexpr (!IsFloat<T>()) {
        constexpr RoundMode mode = std::is_same<T, half>::value ? RoundMode::CAST_NONE : RoundMode::CAST_RINT;
        Cast(dx.ReinterpretCast<T>(), dx, mode, count);
        PipeBarrier<PIPE_V>();
    }
}

// `rows` contiguous GM rows of `cols` elements into UB rows of colAlign elements (32-byte whole).
template <typename T>
__aicore__ inline void LoadRows(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t rows, uint32_t cols)
{
    DataCopyPad(dst, src, DataCopyExtParams(uint16_t(rows), cols * sizeof(T), 0, 0, 0),
                DataCopyPadExtParams<T>(true, 0, 0, T(0)));
}

}  // namespace rmsnorm_backward::anchor
