// SPDX-License-Identifier: BSD-3-Clause
// What every path of the kernel repeats: the Init prologue (tiling, pipe, the tensors in GM), the
// walk over the core's row groups, and the copy-out of a group's dgamma partial. Not a template, so
// its members are plain names in the path classes.
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

class RmsNormBackwardPathBase {
protected:
    // readsInputsOnce: the path reads each byte of dy, x and dres once, so they go past L2.
    template <typename T>
    __aicore__ inline void InitBase(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe,
                                    OperatorGm<T> &gm, bool readsInputsOnce)
    {
        t_ = tiling;
        pipe_ = pipe;
        hasGamma_ = t_.gamma_bytes != 0;
        hasDres_ = t_.has_dres != 0;
        gm.Init(args, t_);
        if (readsInputsOnce) {
            gm.ReadInputsPastL2();
        }
    }

    // gamma is held in fp32 as it is loaded (fp32 data, or a float32 gamma beside 16-bit data): it
    // takes its offset once and is never widened.
    __aicore__ inline bool GammaIsFloat() const { return t_.gamma_bytes == sizeof(float); }
    // gamma is float32 beside 16-bit data: read as it is (never narrowed), no widening.
    template <typename T>
    __aicore__ inline bool WideGamma() const
    {
        return !kIsFloat<T> && GammaIsFloat();
    }

    // gamma whole in UB: float32 gamma (beside 16-bit data too) as it is, 16-bit gamma in its dtype or,
    // `widen`, widened once through `scratch` in pieces of `scratchCols` (a multiple of a repeat's
    // floats). A gamma held in fp32 takes its offset here, once. No flag before the first use: that
    // follows a DeQue, whose MTE2 -> V flag waits for this copy too.
    template <typename T>
    __aicore__ inline void LoadGammaWhole(const OperatorGm<T> &gm, TBuf<QuePosition::VECCALC> &gammaBuf,
                                          const LocalTensor<T> &scratch, uint32_t scratchCols, bool widen)
    {
        if (!hasGamma_) {
            return;
        }
        if (WideGamma<T>()) {
            CopyInPad(gammaBuf.Get<float>(), gm.gammaF32, t_.cols);
        } else if (widen) {
            if constexpr (!kIsFloat<T>) {
                const LocalTensor<float> gamma = gammaBuf.Get<float>();
                for (uint32_t begin = 0; begin < t_.cols; begin += scratchCols) {
                    const uint32_t n = ChunkCols(t_.cols, begin, scratchCols);
                    if (begin > 0) {  // the last piece's widening has read the scratch
                        WaitFor<HardEvent::V_MTE2>(pipe_);
                    }
                    CopyInPad(scratch, gm.gamma[begin], n);
                    WaitFor<HardEvent::MTE2_V>(pipe_);
                    Widen(gamma[begin], scratch, n);
                }
                AddGammaOffset(gamma, t_.gamma_offset, t_.cols);
            }
        } else {
            CopyInPad(gammaBuf.Get<T>(), gm.gamma, t_.cols);
        }
        if (GammaIsFloat() && t_.gamma_offset != 0.0f) {
            WaitFor<HardEvent::MTE2_V>(pipe_);
            AddGammaOffset(gammaBuf.Get<float>(), t_.gamma_offset, t_.cols);
        }
    }

    // The core's groups: b, b + blockNum, ... (see GroupRows).
    __aicore__ inline uint32_t FirstGroup() const { return GetBlockIdx(); }
    __aicore__ inline uint32_t NextGroup(uint32_t groupIdx) const { return groupIdx + GetBlockNum(); }

    // The group's dgamma (its first `count` cols) leaves once the vector unit has written it (without
    // gamma there is none).
    __aicore__ inline void CopyOutDgamma(const GlobalTensor<float> &partial, const LocalTensor<float> &dgamma,
                                         uint32_t count)
    {
        if (hasGamma_) {
            WaitFor<HardEvent::V_MTE3>(pipe_);
            CopyOutPad(partial, dgamma, count);
        }
    }
    // The next group zeroes its dgamma accumulator only once the last one has left.
    __aicore__ inline void WaitDgammaLeft()
    {
        if (hasGamma_) {
            WaitFor<HardEvent::MTE3_V>(pipe_);
        }
    }

    RmsNormBackwardTilingData t_;
    TPipe *pipe_ = nullptr;
    bool hasGamma_ = true;  // false: the scale is 1 and there is no dgamma to sum
    bool hasDres_ = false;  // dres is added to dx (the fused add-RMSNorm backward)
};

}  // namespace rmsnorm_backward::kernel
