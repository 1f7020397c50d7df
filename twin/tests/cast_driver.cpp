// SPDX-License-Identifier: BSD-3-Clause
// One Ascend C kernel that issues Cast for any (source, destination) pair and RoundMode chosen at run
// time by the parameter slots below (read by twin/tests/test_cast.py), so every case shares one
// compiled object. GM src is copied into UB buffer A, Cast writes into buffer D (initialised from
// GM dst, so masked-off lanes are checked to keep their values), D is copied back.
#include "kernel_operator.h"
using namespace AscendC;

enum Slot { kPair, kMode, kForm, kCount, kMaskLen, kMaskW0, kMaskW1, kRepeat, kDstBlk, kSrcBlk, kDstRep, kSrcRep,
            kLenSrc, kLenDst, kOffSrc, kOffDst, kInPlace, kSlots };
enum Form { kCountForm, kMaskLenForm, kMaskBitsForm };
// Pairs as "source to destination"; the last is not a Cast pair of the twin (a rule test). Half <->
// bfloat16_t is no A2 conversion at all: both the twin and the real headers reject it at compile time.
enum Pair { kHalfToFloat, kBf16ToFloat, kFloatToHalf, kFloatToBf16, kFloatToFloat, kFloatToInt32, kHalfToInt32,
            kInt32ToFloat, kFloatToInt16 };

template <typename T, typename U>
void Run(const int32_t *p, GM_ADDR src, GM_ADDR dst)
{
    TPipe pipe;
    TBuf<QuePosition::VECCALC> bufA, bufD;
    pipe.InitBuffer(bufA, 65536);
    pipe.InitBuffer(bufD, 65536);
    LocalTensor<U> A = bufA.Get<U>();
    LocalTensor<T> D = bufD.Get<T>();
    GlobalTensor<U> gs;
    GlobalTensor<T> gd;
    gs.SetGlobalBuffer((__gm__ U *)src);
    gd.SetGlobalBuffer((__gm__ T *)dst);
    // In place: the source lives in D's buffer (the 16-bit-data-in-a-32-bit-buffer layouts).
    LocalTensor<U> S = p[kInPlace] ? D.template ReinterpretCast<U>() : A;
    DataCopy(D, gd, p[kLenDst]);
    PipeBarrier<PIPE_ALL>();
    DataCopy(S[p[kOffSrc]], gs, p[kLenSrc]);
    PipeBarrier<PIPE_ALL>();
    const RoundMode mode = static_cast<RoundMode>(p[kMode]);
    const uint64_t mask[2] = {uint32_t(p[kMaskW0]) | uint64_t(uint32_t(p[kMaskW1])) << 32, 0};
    const UnaryRepeatParams rp(p[kDstBlk], p[kSrcBlk], p[kDstRep], p[kSrcRep]);
    const LocalTensor<T> d = D[p[kOffDst]];
    const LocalTensor<U> s = S[p[kOffSrc]];
    switch (p[kForm]) {
    case kCountForm: Cast(d, s, mode, uint32_t(p[kCount])); break;
    case kMaskLenForm: Cast(d, s, mode, uint64_t(p[kMaskLen]), p[kRepeat], rp); break;
    case kMaskBitsForm: Cast(d, s, mode, mask, p[kRepeat], rp); break;
    default: break;
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(gd, D, p[kLenDst]);
}

extern "C" __global__ __aicore__ void cast_driver(GM_ADDR params, GM_ADDR src, GM_ADDR dst)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, kSlots);
    int32_t p[kSlots];
    for (int32_t i = 0; i < kSlots; ++i) p[i] = pg.GetValue(i);
    switch (p[kPair]) {
    case kHalfToFloat: Run<float, half>(p, src, dst); break;
    case kBf16ToFloat: Run<float, bfloat16_t>(p, src, dst); break;
    case kFloatToHalf: Run<half, float>(p, src, dst); break;
    case kFloatToBf16: Run<bfloat16_t, float>(p, src, dst); break;
    case kFloatToFloat: Run<float, float>(p, src, dst); break;
    case kFloatToInt32: Run<int32_t, float>(p, src, dst); break;
    case kHalfToInt32: Run<int32_t, half>(p, src, dst); break;
    case kInt32ToFloat: Run<float, int32_t>(p, src, dst); break;
    case kFloatToInt16: Run<int16_t, float>(p, src, dst); break;
    default: break;
    }
}
