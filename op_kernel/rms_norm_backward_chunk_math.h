// SPDX-License-Identifier: BSD-3-Clause
// The fp32 math the long-rows paths (rms_norm_backward_long_rows.h and
// rms_norm_backward_long_rows_streamed.h) run on a chunk of a row: the fp32 view of an input, the row
// sum of gamma*(dy*x) kept lane-wise and its total, and dx = rstd*g with the optional dres of a fused
// residual. Free functions over the tensors they are given: each path keeps its buffers and schedule.
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

// The fp32 view of a chunk input: the input itself for fp32, else widened into `scratch`.
template <typename T>
__aicore__ inline LocalTensor<float> AsFloat(const LocalTensor<float> &scratch, const LocalTensor<T> &src,
                                             uint32_t count)
{
    if constexpr (kIsFloat<T>) {
        return src;
    } else {
        Widen(scratch, src, count);
        return scratch;
    }
}

// sum[0, lanes) += gamma*(dy*x) (dy*x without gamma, `scaled` false) over the chunk in pieces of
// `lanes` lanes; the row's first piece (`first`) initialises it.
template <bool scaled>
__aicore__ inline void AddLaneSum(const LocalTensor<float> &sum, const LocalTensor<float> &gamma,
                                  const LocalTensor<float> &dyX, uint32_t count, uint32_t lanes, bool first)
{
    for (uint32_t p = 0; p < count; p += lanes) {
        const uint32_t n = count - p < lanes ? count - p : lanes;
        if constexpr (scaled) {
            if (first && p == 0) {
                Mul(sum, gamma, dyX, n);
            } else {
                MulAddDst(sum, gamma[p], dyX[p], n);
            }
        } else if (first && p == 0) {
            Muls(sum, dyX, 1.0f, n);
        } else {
            Add(sum, sum, dyX[p], n);
        }
    }
}

// The sum of values[0, count) on the scalar unit, reduced into `total` with `work`; the vector unit
// waits for the read before it overwrites `total` again.
__aicore__ inline float RowTotal(const LocalTensor<float> &total, const LocalTensor<float> &values,
                                 const LocalTensor<float> &work, uint32_t count, TPipe *pipe)
{
    ReduceSum(total, values, work, count);
    WaitFor<HardEvent::V_S>(pipe);
    const float value = total.GetValue(0);
    WaitFor<HardEvent::S_V>(pipe);
    return value;
}

// dx = rstd*g, rounded to the dtype (16-bit: g is scaled in place first).
template <typename T>
__aicore__ inline void ScaleToDx(const LocalTensor<T> &dx, const LocalTensor<float> &g, float rstd, uint32_t count)
{
    if constexpr (kIsFloat<T>) {
        Muls(dx, g, rstd, count);
    } else {
        if (rstd != 1.0f) {  // (a wide row's g holds rstd already)
            Muls(g, g, rstd, count);
        }
        Narrow(dx, g, count);
    }
}

// dx = rstd*g + dres, added in fp32 and rounded once: 16-bit dres widened into `scratch` takes rstd*g
// in one Axpy.
template <typename T>
__aicore__ inline void ScaleToDxPlusDres(const LocalTensor<T> &dx, const LocalTensor<float> &g,
                                         const LocalTensor<T> &dres, float rstd, const LocalTensor<float> &scratch,
                                         uint32_t count)
{
    if constexpr (kIsFloat<T>) {
        Muls(g, g, rstd, count);
        Add(dx, g, dres, count);
    } else {
        Widen(scratch, dres, count);
        Axpy(scratch, g, rstd, count);
        Narrow(dx, scratch, count);
    }
}

// Products of two fp16 inputs formed in fp32 straight from the halves, by MulAddDst with half sources
// into a float destination: each half has 11 significant bits, so the product is exact in fp32 and
// these give the bits that widening both inputs first gives, in fewer vector instructions (bf16 has
// no such instruction on A2). The sources may not overlap the destination.
// dst = a*b: 2 instructions where widening takes 3.
__aicore__ inline void HalfProduct(const LocalTensor<float> &dst, const LocalTensor<half> &a,
                                   const LocalTensor<half> &b, uint32_t count)
{
    Duplicate(dst, 0.0f, count);
    MulAddDst(dst, a, b, count);
}
// dst = a*b + scale*x, x widened into dst: 3 instructions where widening a, b and x takes 5.
__aicore__ inline void HalfProductAxpy(const LocalTensor<float> &dst, const LocalTensor<half> &a,
                                       const LocalTensor<half> &b, const LocalTensor<half> &x, float scale,
                                       uint32_t count)
{
    Widen(dst, x, count);
    Muls(dst, dst, scale, count);
    MulAddDst(dst, a, b, count);
}

// dyX = dy*x in fp32: fp16 from the halves (whatever gamma is: the product needs dy and x only), bf16
// widened (scratch takes x), fp32 as it is.
template <typename T>
__aicore__ inline void DyTimesX(const LocalTensor<float> &dyX, const LocalTensor<float> &scratch,
                                const LocalTensor<T> &dy, const LocalTensor<T> &x, uint32_t count)
{
    if constexpr (kDtypeOf<T> == RmsNormBackwardDtype::kFloat16) {
        HalfProduct(dyX, dy, x, count);
    } else {
        Mul(dyX, AsFloat(dyX, dy, count), AsFloat(scratch, x, count), count);
    }
}

// A 16-bit row (or chunk) widened as a = rstd*dy and b = x: dgamma += a*b (= dy*xhat), then a *= gamma
// (a = rstd*g), where there is a gamma (held in fp32).
template <typename T>
__aicore__ inline void WidenScaled(const LocalTensor<float> &a, const LocalTensor<float> &b,
                                   const LocalTensor<float> &dgamma, const LocalTensor<float> &gamma,
                                   const LocalTensor<T> &dy, const LocalTensor<T> &x, float rstd, bool hasGamma,
                                   uint32_t count)
{
    Widen(a, dy, count);
    Widen(b, x, count);
    Muls(a, a, rstd, count);
    if (hasGamma) {
        MulAddDst(dgamma, a, b, count);
        Mul(a, a, gamma, count);
    }
}

// Pass 1 of the 16-bit chunk a row keeps widened (a row's last in pass 1, its first in pass 2):
// a = rstd*dy and b = x stay in fp32 for pass 2, which then writes dx = a + rstd*xScale*b rounded (2
// instructions, not 6). dgamma += a*b (= dy*xhat); a *= gamma (a = rstd*g); the row sum's lanes are
// scaled by rstd (the other chunks summed g*x into their first `summed`) and take a*b (= g*xhat).
template <typename T>
__aicore__ inline void KeptChunkPass1(const LocalTensor<float> &a, const LocalTensor<float> &b,
                                      const LocalTensor<float> &sum, const LocalTensor<float> &dgamma,
                                      const LocalTensor<float> &gamma, const LocalTensor<T> &dy,
                                      const LocalTensor<T> &x, float rstd, bool hasGamma, uint32_t count,
                                      uint32_t summed)
{
    if constexpr (!kIsFloat<T>) {  // (fp32 rows are never widened)
        WidenScaled(a, b, dgamma, gamma, dy, x, rstd, hasGamma, count);
        if (summed > 0) {
            Muls(sum, sum, rstd, summed);
            MulAddDst(sum, a, b, summed < count ? summed : count);
        }
        if (count > summed) {
            Mul(sum[summed], a[summed], b[summed], count - summed);
        }
    }
}

}  // namespace rmsnorm_backward::kernel
