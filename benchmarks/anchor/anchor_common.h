// The anchor: CANN ops-nn RmsNormGrad's schedule as issue 17 describes it, written here from that
// description (not from its sources) so that it runs on the same twin and timeline as our kernel.
// This header holds what its paths share: the tiling, the per-core row range, the pipe handshakes,
// the halving-tree row sum and the two ways dgamma reaches GM (atomic adds, or a workspace row per
// core summed in a fixed order).
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

namespace anchor {

// Filled by benchmarks/anchor/host.py (field order and types must match its TILING_FIELDS).
struct AnchorTiling {
    uint64_t rows;
    uint32_t cols;
    uint32_t rowStride;      // UB elements per row: cols rounded up to 16 (32 bytes of fp16, 64 of fp32)
    uint32_t blockDim;
    uint32_t tileRows;       // rows per UB tile: 1 on split-N, (195584 - 10C) / (24C + 268) on small-D
    uint32_t chunkCols;      // split-D: columns per chunk
    uint32_t groupRows;      // split-D: rows per group (the re-read distance of pass 2)
    uint32_t deterministic;  // 0: dgamma by atomic adds; 1: workspace rows, SyncAll, fixed-order sum
    uint32_t wsStride;       // fp32 elements per core's workspace row
    float invCols;
    uint32_t taskCols;       // deterministic final sum: columns per task
};

enum class AnchorPath : uint32_t { kSplitN = 0, kSmallD = 1, kSplitD = 2 };
constexpr uint32_t kDtypes = 3;  // tiling key = path * kDtypes + dtype index (fp32, fp16, bf16)

constexpr uint32_t kBlockBytes = 32;
constexpr uint32_t kFloatsPerRepeat = 64;

__aicore__ inline uint32_t RoundUp(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }

template <typename T>
constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

// Rows split evenly over the cores: core b takes [rows*b/B, rows*(b+1)/B).
struct RowRange {
    uint64_t begin;
    uint64_t end;
};
__aicore__ inline RowRange CoreRows(const AnchorTiling &t)
{
    const uint64_t b = GetBlockIdx();
    return {t.rows * b / t.blockDim, t.rows * (b + 1) / t.blockDim};
}

// The operator's tensors in GM, as every path of the anchor sees them.
template <typename T>
struct AnchorGm {
    GlobalTensor<T> dy, x, dx, gamma;
    GlobalTensor<float> rstd;

    __aicore__ inline void Init(GM_ADDR dyAddr, GM_ADDR xAddr, GM_ADDR rstdAddr, GM_ADDR gammaAddr, GM_ADDR dxAddr,
                                const AnchorTiling &t)
    {
        dy.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dyAddr), t.rows * t.cols);
        x.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(xAddr), t.rows * t.cols);
        dx.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dxAddr), t.rows * t.cols);
        rstd.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(rstdAddr), t.rows);
        gamma.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(gammaAddr), t.cols);
    }
};

template <HardEvent event>
__aicore__ inline void WaitFor(TPipe *pipe)
{
    const event_t id = static_cast<event_t>(pipe->FetchEventID(event));
    SetFlag<event>(id);
    WaitFlag<event>(id);
}

// `rows` GM rows of `cols` elements (contiguous, `gmPitch` elements apart) into UB rows `ubPitch`
// elements apart; both pitches keep every UB row 32-byte aligned.
template <typename T>
__aicore__ inline void LoadRows(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t rows, uint32_t cols,
                                uint32_t gmPitch, uint32_t ubPitch)
{
    const uint32_t gap = (ubPitch * sizeof(T) - RoundUp(cols * sizeof(T), kBlockBytes)) / kBlockBytes;
    DataCopyPad(dst, src, DataCopyExtParams(rows, cols * sizeof(T), (gmPitch - cols) * sizeof(T), gap, 0),
                DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}
template <typename T>
__aicore__ inline void StoreRows(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t rows, uint32_t cols,
                                 uint32_t gmPitch, uint32_t ubPitch)
{
    const uint32_t gap = (ubPitch * sizeof(T) - RoundUp(cols * sizeof(T), kBlockBytes)) / kBlockBytes;
    DataCopyPad(dst, src, DataCopyExtParams(rows, cols * sizeof(T), gap, (gmPitch - cols) * sizeof(T), 0));
}

// Every vector pass of the anchor is followed by a full vector barrier, as the schedule has it.
__aicore__ inline void VectorBarrier() { PipeBarrier<PIPE_V>(); }

// Sum of `count` fp32 values, destroying them: fold the part past the largest 64 * 2^k that fits,
// halve down to one repeat, then one WholeReduceSum. The scalar unit reads the result.
__aicore__ inline float HalvingTreeSum(const LocalTensor<float> &sum, const LocalTensor<float> &values, uint32_t count,
                                       TPipe *pipe)
{
    uint32_t width = kFloatsPerRepeat;
    if (count <= width) {
        width = count;
    } else {
        while (width * 2 <= count) {
            width *= 2;
        }
        if (count > width) {
            Add(values, values, values[width], count - width);
            VectorBarrier();
        }
        while (width > kFloatsPerRepeat) {
            width /= 2;
            Add(values, values, values[width], width);
            VectorBarrier();
        }
    }
    WholeReduceSum(sum, values, width, 1, 1, 1, 8);
    WaitFor<HardEvent::V_S>(pipe);
    const float total = sum.GetValue(0);
    WaitFor<HardEvent::S_V>(pipe);  // the next row's reduce overwrites what the scalar unit read
    return total;
}

// dgamma's GM side: with atomic adds block 0 zeroes dgamma before a SyncAll; deterministically each
// core zeroes its own workspace row instead, and nothing is shared until the final sum.
struct DgammaGm {
    GlobalTensor<float> dgamma, ownRow, rows;

    __aicore__ inline void Init(GM_ADDR dgammaAddr, GM_ADDR workspace, const AnchorTiling &t)
    {
        dgamma.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dgammaAddr), t.cols);
        if (t.deterministic) {
            auto *base = reinterpret_cast<__gm__ float *>(GetUserWorkspace(workspace));
            rows.SetGlobalBuffer(base, uint64_t(t.blockDim) * t.wsStride);
            ownRow.SetGlobalBuffer(base + uint64_t(GetBlockIdx()) * t.wsStride, t.cols);
        } else {
            ownRow = dgamma;
        }
    }

    // Zeroes what this core will add into, using `zeros` (at least `width` fp32 of UB) per chunk.
    __aicore__ inline void Zero(const AnchorTiling &t, const LocalTensor<float> &zeros, uint32_t width, TPipe *pipe)
    {
        const bool mine = t.deterministic || GetBlockIdx() == 0;
        if (mine) {
            Duplicate(zeros, 0.0f, width);
            WaitFor<HardEvent::V_MTE3>(pipe);
            for (uint32_t c = 0; c < t.cols; c += width) {
                const uint32_t n = t.cols - c < width ? t.cols - c : width;
                DataCopyPad(ownRow[c], zeros, DataCopyExtParams(1, n * sizeof(float), 0, 0, 0));
            }
            PipeBarrier<PIPE_MTE3>();  // the atomic adds below land on the bytes just zeroed
        }
        if (!t.deterministic) {
            SyncAll();
        }
        if (mine) {
            WaitFor<HardEvent::MTE3_V>(pipe);
        }
    }

    // Adds `width` fp32 of UB into this core's target at column `col`.
    __aicore__ inline void AddPart(uint32_t col, const LocalTensor<float> &part, uint32_t width, TPipe *pipe)
    {
        WaitFor<HardEvent::V_MTE3>(pipe);
        SetAtomicAdd<float>();
        DataCopyPad(ownRow[col], part, DataCopyExtParams(1, width * sizeof(float), 0, 0, 0));
        SetAtomicNone();
        WaitFor<HardEvent::MTE3_V>(pipe);  // the UB partial is zeroed again for the next chunk or group
    }
};

// Deterministic mode, after every core's workspace row landed: 64-column tasks dealt round-robin
// over the cores, each summing the cores' rows in core order.
__aicore__ inline void FinalSum(const AnchorTiling &t, const DgammaGm &gm, TPipe *pipe)
{
    SyncAll();
    pipe->Reset();
    TBuf<QuePosition::VECCALC> rowsBuf, accBuf;
    const uint32_t pitch = t.taskCols;  // fp32 elements per UB row (a task's width is 32-byte whole)
    pipe->InitBuffer(rowsBuf, t.blockDim * pitch * sizeof(float));
    pipe->InitBuffer(accBuf, pitch * sizeof(float));
    LocalTensor<float> rows = rowsBuf.Get<float>();
    LocalTensor<float> acc = accBuf.Get<float>();
    const uint32_t tasks = (t.cols + t.taskCols - 1) / t.taskCols;
    for (uint32_t k = GetBlockIdx(); k < tasks; k += GetBlockNum()) {
        const uint32_t col = k * t.taskCols;
        const uint32_t width = t.cols - col < t.taskCols ? t.cols - col : t.taskCols;
        LoadRows(rows, gm.rows[col], t.blockDim, width, t.wsStride, pitch);
        WaitFor<HardEvent::MTE2_V>(pipe);
        Adds(acc, rows, 0.0f, width);
        VectorBarrier();
        for (uint32_t c = 1; c < t.blockDim; ++c) {
            Add(acc, acc, rows[c * pitch], width);
            VectorBarrier();
        }
        WaitFor<HardEvent::V_MTE2>(pipe);  // the next task's load overwrites the rows just summed
        WaitFor<HardEvent::V_MTE3>(pipe);
        DataCopyPad(gm.dgamma[col], acc, DataCopyExtParams(1, width * sizeof(float), 0, 0, 0));
        WaitFor<HardEvent::MTE3_V>(pipe);  // and its sum overwrites acc
    }
}

// What every path of the anchor holds and sets up the same way: its tiling, the pipe, the operator's
// tensors in GM and dgamma's GM side.
template <typename T>
class AnchorKernelBase {
protected:
    __aicore__ inline void InitBase(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                    GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        t_ = tiling;
        pipe_ = pipe;
        gm_.Init(dy, x, rstd, gamma, dx, t_);
        out_.Init(dgamma, workspace, t_);
    }

    AnchorTiling t_;
    TPipe *pipe_ = nullptr;
    AnchorGm<T> gm_;
    DgammaGm out_;
};

}  // namespace anchor
