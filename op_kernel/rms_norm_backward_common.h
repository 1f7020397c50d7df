// SPDX-License-Identifier: BSD-3-Clause
// What every path of the RmsNormBackward kernel shares: the row groups of dgamma, the widening and
// rounding casts, and the pipe handshakes around scalar reads of UB.
#pragma once
#include "kernel_operator.h"
#include "rms_norm_backward_tiling_data.h"
#include "rms_norm_backward_ub_layout.h"

using namespace AscendC;

namespace rmsnorm_backward::kernel {

using rmsnorm_backward::layout::kBlockBytes;
using rmsnorm_backward::layout::kDoubleBuffer;
using rmsnorm_backward::layout::kEventIdsPerEvent;
using rmsnorm_backward::layout::kFloatsPerBlock;
using rmsnorm_backward::layout::kFloatsPerRepeat;
using rmsnorm_backward::layout::kRepeatBytes;
constexpr uint8_t kBlocksPerRepeat = kRepeatBytes / kBlockBytes;
constexpr uint32_t kMaxRepeats = 255;  // the most repeats one vector instruction takes (its 8-bit field)

// 16-bit data is widened to fp32; fp32 data is computed on where it lands.
template <typename T>
constexpr bool kIsFloat = sizeof(T) == sizeof(float);

// The dtype code of T, as the tiling key spells it.
template <typename T>
struct DtypeOf;
template <>
struct DtypeOf<float> {
    static constexpr RmsNormBackwardDtype value = RmsNormBackwardDtype::kFloat32;
};
template <>
struct DtypeOf<half> {
    static constexpr RmsNormBackwardDtype value = RmsNormBackwardDtype::kFloat16;
};
template <>
struct DtypeOf<bfloat16_t> {
    static constexpr RmsNormBackwardDtype value = RmsNormBackwardDtype::kBfloat16;
};
template <typename T>
constexpr RmsNormBackwardDtype kDtypeOf = DtypeOf<T>::value;

// Repeat parameters, strides in blocks. Contiguous operands advance one repeat per repeat; an operand
// read again by every repeat (one 64-lane pattern) has repeat stride 0; one block read by every block
// of every repeat (a per-row scalar as a block) has block and repeat stride 0.
__aicore__ inline BinaryRepeatParams Src1RepeatedPerRepeat()
{
    return BinaryRepeatParams(1, 1, 1, kBlocksPerRepeat, kBlocksPerRepeat, 0);
}
__aicore__ inline BinaryRepeatParams Src1OneBlock()
{
    return BinaryRepeatParams(1, 1, 0, kBlocksPerRepeat, kBlocksPerRepeat, 0);
}

using rmsnorm_backward::layout::CeilDiv;  // the layout's, written once
using rmsnorm_backward::layout::RoundUp;

// Cols of the chunk of C cols that starts at col `begin` of a row of `cols` (the row's last one is short).
__aicore__ inline uint32_t ChunkCols(uint32_t cols, uint32_t begin, uint32_t C)
{
    return cols - begin < C ? cols - begin : C;
}

// dgamma is summed per row group: group i holds rows [rows*i/G, rows*(i+1)/G). The groups depend on
// the shape only; core b takes groups b, b + blockNum, ... so every block dim gives the same partials.
struct RowGroup {
    uint64_t begin;
    uint64_t end;
};
__aicore__ inline RowGroup GroupRows(const RmsNormBackwardTilingData &t, uint32_t groupIdx)
{
    return {t.rows * groupIdx / t.groups, t.rows * (groupIdx + 1) / t.groups};
}

__aicore__ inline uint32_t TileRows(const RowGroup &group, uint64_t row, uint32_t tileRows)
{
    const uint64_t left = group.end - row;
    return left < tileRows ? uint32_t(left) : tileRows;
}

// The kernel's arguments, as the entry receives them (one declaration each: GM_ADDR is a macro).
struct KernelArgs {
    GM_ADDR dy;
    GM_ADDR x;
    GM_ADDR rstd;
    GM_ADDR gamma;
    GM_ADDR dres;
    GM_ADDR dx;
    GM_ADDR dgamma;
    GM_ADDR workspace;
};

// The operator's tensors in GM, as every path sees them.
template <typename T>
struct OperatorGm {
    GlobalTensor<T> dy, x, dx, gamma, dres;
    GlobalTensor<float> gammaF32;  // a float32 gamma beside 16-bit data (gamma_bytes = 4)
    GlobalTensor<float> rstd;
    GM_ADDR dgamma = nullptr;
    GM_ADDR workspace = nullptr;

    __aicore__ inline void Init(const KernelArgs &args, const RmsNormBackwardTilingData &t)
    {
        dy.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(args.dy), t.rows * t.cols);
        x.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(args.x), t.rows * t.cols);
        dx.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(args.dx), t.rows * t.cols);
        rstd.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(args.rstd), t.rows);
        if (t.gamma_bytes == sizeof(T)) {  // absent: a null GM_ADDR, never read
            gamma.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(args.gamma), t.cols);
        } else if (t.gamma_bytes == sizeof(float)) {
            gammaF32.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(args.gamma), t.cols);
        }
        if (t.has_dres != 0) {
            dres.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(args.dres), t.rows * t.cols);
        }
        dgamma = args.dgamma;
        workspace = args.workspace;
    }

    // dy, x and dres read past L2 (CACHE_MODE_DISABLE), for a path that reads each of their bytes once:
    // they then leave L2 to dx, whose writes land there instead of going to HBM, and to gamma and the
    // dgamma partials, which are read again. A path that reads them twice keeps them in L2.
    __aicore__ inline void ReadInputsPastL2()
    {
        dy.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
        x.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
        dres.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    }

    // A group's fp32 partial of dgamma: straight into dgamma when there is one group (no reduction).
    __aicore__ inline GlobalTensor<float> Partial(const RmsNormBackwardTilingData &t, uint32_t groupIdx) const
    {
        __gm__ float *base = t.groups == 1 ? reinterpret_cast<__gm__ float *>(dgamma)
                                           : reinterpret_cast<__gm__ float *>(GetUserWorkspace(workspace)) +
                                                 uint64_t(groupIdx) * t.partial_stride;
        GlobalTensor<float> partial;
        partial.SetGlobalBuffer(base, t.cols);
        return partial;
    }
};

// 16-bit data is widened to fp32 for all arithmetic (bf16 has no vector arithmetic on A2) and dx is
// rounded once on the way out, to nearest even.
template <typename T>
__aicore__ inline void Widen(const LocalTensor<float> &dst, const LocalTensor<T> &src, uint32_t count)
{
    Cast(dst, src, RoundMode::CAST_NONE, count);
}
template <typename T>
__aicore__ inline void Narrow(const LocalTensor<T> &dst, const LocalTensor<float> &src, uint32_t count)
{
    Cast(dst, src, RoundMode::CAST_RINT, count);
}

// The scale the forward used is gamma + gamma_offset, added in fp32 once gamma is widened (a 16-bit
// gamma + 1 would lose gamma's low bits); an offset of 0 costs nothing.
__aicore__ inline void AddGammaOffset(const LocalTensor<float> &gamma, float offset, uint32_t count)
{
    if (offset != 0.0f) {
        Adds(gamma, gamma, offset, count);
    }
}

// A tile of fp32 rows `rowLanes` apart, `lanes` in all: its first row copied over the others, in
// doubling copies (log2 of the rows instructions).
__aicore__ inline void RepeatFirstRow(const LocalTensor<float> &tile, uint32_t rowLanes, uint32_t lanes)
{
    for (uint32_t done = rowLanes; done < lanes; done *= 2) {
        const uint32_t copy = done < lanes - done ? done : lanes - done;
        Muls(tile[done], tile, 1.0f, copy);
    }
}

// The first `rows` fp32 rows of a tile, `rowLanes` apart, added onto its first row pairwise, the upper
// rows onto the lower ones, in log2 steps: a fixed order, so the same sum on every core and every run.
__aicore__ inline void AddRowsOntoFirst(const LocalTensor<float> &tile, uint32_t rows, uint32_t rowLanes)
{
    while (rows > 1) {
        const uint32_t half = rows / 2;
        Add(tile, tile, tile[(rows - half) * rowLanes], half * rowLanes);
        rows -= half;
    }
}

// One pipe waits for everything another pipe issued so far (e.g. V_S before a scalar GetValue of a
// vector result, MTE2_S before reading copied-in rstd, V_MTE3 before copying a vector result out).
template <HardEvent event>
__aicore__ inline void WaitFor(TPipe *pipe)
{
    const event_t id = static_cast<event_t>(pipe->FetchEventID(event));
    SetFlag<event>(id);
    WaitFlag<event>(id);
}

// Copies `count` elements of GM into 32-byte aligned UB (a length that need not fill whole blocks).
template <typename T>
__aicore__ inline void CopyInPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count)
{
    DataCopyPad(dst, src, DataCopyExtParams(1, count * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}
template <typename T>
__aicore__ inline void CopyOutPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    DataCopyPad(dst, src, DataCopyExtParams(1, count * sizeof(T), 0, 0, 0));
}
// `rows` rows of `cols` elements, contiguous in GM, each landing at a 32-byte aligned UB row.
template <typename T>
__aicore__ inline void CopyInRows(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t rows, uint32_t cols)
{
    DataCopyPad(dst, src, DataCopyExtParams(rows, cols * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}
template <typename T>
__aicore__ inline void CopyOutRows(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t rows, uint32_t cols)
{
    DataCopyPad(dst, src, DataCopyExtParams(rows, cols * sizeof(T), 0, 0, 0));
}

}  // namespace rmsnorm_backward::kernel
