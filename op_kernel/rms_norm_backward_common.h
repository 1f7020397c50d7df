// What every path of the RmsNormBackward kernel shares: the row groups of dgamma, the widening and
// rounding casts, and the pipe handshakes around scalar reads of UB.
#pragma once
#include "kernel_operator.h"
#include "rms_norm_backward_tiling_data.h"
#include "rms_norm_backward_ub_layout.h"

using namespace AscendC;

namespace rms_norm_backward_impl {

using rms_norm_backward_layout::kBlockBytes;
using rms_norm_backward_layout::kFloatsPerBlock;
using rms_norm_backward_layout::kFloatsPerRepeat;
using rms_norm_backward_layout::kRepeatBytes;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t RoundUp(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }

// dgamma is summed per row group: group g holds rows [rows*g/G, rows*(g+1)/G). The groups depend on
// the shape only; core b takes groups b, b + blockNum, ... so every block dim gives the same partials.
struct RowGroup {
    uint64_t begin;
    uint64_t end;
};
__aicore__ inline RowGroup GroupRows(const RmsNormBackwardTilingData &t, uint32_t g)
{
    return {t.rows * g / t.groups, t.rows * (g + 1) / t.groups};
}

__aicore__ inline uint32_t TileRows(const RowGroup &group, uint64_t row, uint32_t tileRows)
{
    const uint64_t left = group.end - row;
    return left < tileRows ? uint32_t(left) : tileRows;
}

// The operator's tensors in GM, as every path sees them.
template <typename T>
struct OperatorGm {
    GlobalTensor<T> dy, x, dx, gamma;
    GlobalTensor<float> rstd;
    GM_ADDR dgamma = nullptr;
    GM_ADDR workspace = nullptr;

    __aicore__ inline void Init(GM_ADDR dyAddr, GM_ADDR xAddr, GM_ADDR rstdAddr, GM_ADDR gammaAddr, GM_ADDR dxAddr,
                                GM_ADDR dgammaAddr, GM_ADDR workspaceAddr, const RmsNormBackwardTilingData &t)
    {
        dy.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dyAddr), t.rows * t.cols);
        x.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(xAddr), t.rows * t.cols);
        dx.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dxAddr), t.rows * t.cols);
        rstd.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(rstdAddr), t.rows);
        gamma.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(gammaAddr), t.cols);
        dgamma = dgammaAddr;
        workspace = workspaceAddr;
    }

    // Group g's fp32 partial of dgamma: straight into dgamma when there is one group (no reduction).
    __aicore__ inline GlobalTensor<float> Partial(const RmsNormBackwardTilingData &t, uint32_t g) const
    {
        __gm__ float *base = t.groups == 1 ? reinterpret_cast<__gm__ float *>(dgamma)
                                           : reinterpret_cast<__gm__ float *>(GetUserWorkspace(workspace)) +
                                                 uint64_t(g) * t.partial_stride;
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

}  // namespace rms_norm_backward_impl
