// SPDX-License-Identifier: BSD-3-Clause
// One Ascend C kernel that issues any vector or reduction instruction of the twin, chosen at run
// time by the parameter slots below (read by twin/tests/vector_driver.py), so the tests of every
// dtype, form and rule share one compiled object.
// UB holds three TBuf buffers A, B and D. GM a, b and d are copied into them (only the first
// `definedA` elements of A: the rest stays poisoned), the instruction runs on views at element
// offsets offA / offB / offD (sources may be taken from D instead, to test address overlap), and
// D is copied back to d.
#include "kernel_operator.h"
using namespace AscendC;

enum Slot {
    kOp, kDtype, kCount, kOffA, kOffB, kOffD, kMaskLen, kMaskW0, kMaskW1, kMaskW2, kMaskW3, kRepeat,
    kDstBlk, kSrc0Blk, kSrc1Blk, kDstRep, kSrc0Rep, kSrc1Rep, kScalar, kDefinedA, kLenB, kLenD, kAlias,
    kBufBytes, kOrder, kSlots  // kOrder: the ReduceOrder, or calIndex of ReduceMax / ReduceMin
};

enum Op {
    kBinaryCount = 0,      // + 0..5: Add Sub Mul Div Max Min
    kBinaryMaskLen = 10,
    kBinaryMaskBits = 20,
    kBinaryRegNormal = 30,  // isSetMask = false, Normal mode (SetVectorMask bits)
    kBinaryRegCounter = 40, // isSetMask = false, Counter mode (SetVectorMask count)
    kScalarCount = 50,      // + 0..3: Adds Muls Maxs Mins
    kScalarMaskLen = 60,
    kScalarMaskBits = 64,
    kUnaryCount = 70,       // + 0..4: Exp Ln Sqrt Abs Reciprocal
    kUnaryMaskLen = 75,
    kDupCount = 80, kDupMaskLen, kDupMaskBits, kBrcb,
    kReduceSumCount = 90, kReduceSumMaskLen, kReduceSumMaskBits, kWholeMaskLen, kWholeMaskBits, kBlockMaskLen,
    kBlockMaskBits, kWholeCounter,
    kReduceMaxCount = 100, kReduceMinCount, kReduceMaxMaskLen, kReduceMinMaskLen, kReduceMaxMaskBits, kReduceMinMaskBits,
    kWholeMaxMaskLen = 110, kWholeMinMaskLen, kWholeMaxMaskBits, kWholeMinMaskBits, kBlockMaxMaskLen, kBlockMinMaskLen,
    kBlockMaxMaskBits, kBlockMinMaskBits, kPairMaskLen, kPairMaskBits,
    kRepeatMax = 120, kRepeatMin, kRepeatSum, kDataBlockMax, kDataBlockMin, kDataBlockSum, kPairElemSum,
    kSumSpr = 130, kSprAlone
};

template <typename T>
T FromBits(int32_t bits)
{
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
}

// Element types an instruction does not support are compile errors in its repeat forms (and in
// every form of the tensor-scalar ops and Duplicate), for the twin as for CANN's headers: such a
// case is only instantiated for the types its instruction takes. The binary and unary count forms
// check the type at run time, so the rule tests reach them with any type.
template <typename T, typename... Ts>
constexpr bool kOneOf = (std::is_same_v<T, Ts> || ...);
#define ARITH(T) kOneOf<T, half, float, int16_t, int32_t>
#define FLOATS(T) kOneOf<T, half, float>
#define FILLS(T) kOneOf<T, half, bfloat16_t, float, int16_t, uint16_t, int32_t, uint32_t>
#define WHEN(ok, call) if constexpr (ok) { call; }
// CHECKED: 1 where the form rejects an unsupported type at compile time.
#define BINARY_CASES(base, CALL, CHECKED) \
    case base + 0: WHEN(!CHECKED || ARITH(T), CALL(Add)) break; \
    case base + 1: WHEN(!CHECKED || ARITH(T), CALL(Sub)) break; \
    case base + 2: WHEN(!CHECKED || ARITH(T), CALL(Mul)) break; \
    case base + 3: WHEN(!CHECKED || FLOATS(T), CALL(Div)) break; \
    case base + 4: WHEN(!CHECKED || ARITH(T), CALL(Max)) break; \
    case base + 5: WHEN(!CHECKED || ARITH(T), CALL(Min)) break;
#define SCALAR_CASES(base, CALL) \
    case base + 0: WHEN(ARITH(T), CALL(Adds)) break; \
    case base + 1: WHEN(ARITH(T), CALL(Muls)) break; \
    case base + 2: WHEN(ARITH(T), CALL(Maxs)) break; \
    case base + 3: WHEN(ARITH(T), CALL(Mins)) break;
#define UNARY_CASES(base, CALL, CHECKED) \
    case base + 0: WHEN(!CHECKED || FLOATS(T), CALL(Exp)) break; \
    case base + 1: WHEN(!CHECKED || FLOATS(T), CALL(Ln)) break; \
    case base + 2: WHEN(!CHECKED || FLOATS(T), CALL(Sqrt)) break; \
    case base + 3: WHEN(!CHECKED || FLOATS(T), CALL(Abs)) break; \
    case base + 4: WHEN(!CHECKED || FLOATS(T), CALL(Reciprocal)) break;

// The max / min reductions, the pair sums and the ReduceType names of every reduction.
template <typename T>
void IssueReduce(const int32_t *p, const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                 const uint64_t (&mask)[2])
{
    const int32_t len = p[kMaskLen], n = p[kCount], rep = p[kRepeat];
    const int32_t dr = p[kDstRep], sb = p[kSrc0Blk], sr = p[kSrc0Rep];
    const ReduceOrder order = static_cast<ReduceOrder>(p[kOrder]);
    const bool index = p[kOrder] != 0;
    switch (p[kOp]) {
    case kReduceMaxCount: ReduceMax(dst, src0, src1, n, index); break;
    case kReduceMinCount: ReduceMin(dst, src0, src1, n, index); break;
    case kReduceMaxMaskLen: ReduceMax(dst, src0, src1, len, rep, sr, index); break;
    case kReduceMinMaskLen: ReduceMin(dst, src0, src1, len, rep, sr, index); break;
    case kReduceMaxMaskBits: ReduceMax(dst, src0, src1, mask, rep, sr, index); break;
    case kReduceMinMaskBits: ReduceMin(dst, src0, src1, mask, rep, sr, index); break;
    case kWholeMaxMaskLen: WholeReduceMax(dst, src0, len, rep, dr, sb, sr, order); break;
    case kWholeMinMaskLen: WholeReduceMin(dst, src0, len, rep, dr, sb, sr, order); break;
    case kWholeMaxMaskBits: WholeReduceMax(dst, src0, mask, rep, dr, sb, sr, order); break;
    case kWholeMinMaskBits: WholeReduceMin(dst, src0, mask, rep, dr, sb, sr, order); break;
    case kBlockMaxMaskLen: BlockReduceMax(dst, src0, rep, len, dr, sb, sr); break;
    case kBlockMinMaskLen: BlockReduceMin(dst, src0, rep, len, dr, sb, sr); break;
    case kBlockMaxMaskBits: BlockReduceMax(dst, src0, rep, mask, dr, sb, sr); break;
    case kBlockMinMaskBits: BlockReduceMin(dst, src0, rep, mask, dr, sb, sr); break;
    case kPairMaskLen: PairReduceSum(dst, src0, rep, len, dr, sb, sr); break;
    case kPairMaskBits: PairReduceSum(dst, src0, rep, mask, dr, sb, sr); break;
    case kRepeatMax: ReduceRepeat<ReduceType::MAX>(dst, src0, len, rep, dr, sb, sr, order); break;
    case kRepeatMin: ReduceRepeat<ReduceType::MIN>(dst, src0, mask, rep, dr, sb, sr, order); break;
    case kRepeatSum: ReduceRepeat<ReduceType::SUM>(dst, src0, len, rep, dr, sb, sr); break;
    case kDataBlockMax: ReduceDataBlock<ReduceType::MAX>(dst, src0, len, rep, dr, sb, sr); break;
    case kDataBlockMin: ReduceDataBlock<ReduceType::MIN>(dst, src0, mask, rep, dr, sb, sr); break;
    case kDataBlockSum: ReduceDataBlock<ReduceType::SUM>(dst, src0, len, rep, dr, sb, sr); break;
    case kPairElemSum: ReducePairElem<ReduceType::SUM>(dst, src0, mask, rep, dr, sb, sr); break;
    case kSumSpr:  // the count form's result, read back from the sum register on the scalar unit
        ReduceSum(dst, src0, src1, n);
        PipeBarrier<PIPE_ALL>();
        dst.SetValue(1, GetReduceRepeatSumSpr<T>());
        break;
    case kSprAlone: dst.SetValue(1, GetReduceRepeatSumSpr<T>()); break;
    default: break;
    }
}

template <typename T>
void Issue(const int32_t *p, const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1)
{
    uint64_t mask[2] = {uint32_t(p[kMaskW0]) | uint64_t(uint32_t(p[kMaskW1])) << 32,
                        uint32_t(p[kMaskW2]) | uint64_t(uint32_t(p[kMaskW3])) << 32};
    const uint64_t len = uint32_t(p[kMaskLen]);
    const int32_t n = p[kCount], rep = p[kRepeat];
    const BinaryRepeatParams bp(p[kDstBlk], p[kSrc0Blk], p[kSrc1Blk], p[kDstRep], p[kSrc0Rep], p[kSrc1Rep]);
    const UnaryRepeatParams up(p[kDstBlk], p[kSrc0Blk], p[kDstRep], p[kSrc0Rep]);
    const T s = FromBits<T>(p[kScalar]);
#define B_COUNT(F) F(dst, src0, src1, n)
#define B_LEN(F) F(dst, src0, src1, len, rep, bp)
#define B_BITS(F) F(dst, src0, src1, mask, rep, bp)
#define B_NORMAL(F) (SetMaskNorm(), SetVectorMask<T>(mask[1], mask[0]), F<T, false>(dst, src0, src1, MASK_PLACEHOLDER, rep, bp), ResetMask())
#define B_COUNTER(F) (SetMaskCount(), SetVectorMask<T, MaskMode::COUNTER>(0, uint64_t(n)), \
                      F<T, false>(dst, src0, src1, MASK_PLACEHOLDER, 1, bp), SetMaskNorm(), ResetMask())
#define S_COUNT(F) F(dst, src0, s, n)
#define S_LEN(F) F(dst, src0, s, len, rep, up)
#define S_BITS(F) F(dst, src0, s, mask, rep, up)
#define U_COUNT(F) F(dst, src0, n)
#define U_LEN(F) F(dst, src0, len, rep, up)
    switch (p[kOp]) {
        BINARY_CASES(kBinaryCount, B_COUNT, 0)
        BINARY_CASES(kBinaryMaskLen, B_LEN, 1)
        BINARY_CASES(kBinaryMaskBits, B_BITS, 1)
        BINARY_CASES(kBinaryRegNormal, B_NORMAL, 1)
        BINARY_CASES(kBinaryRegCounter, B_COUNTER, 1)
        SCALAR_CASES(kScalarCount, S_COUNT)
        SCALAR_CASES(kScalarMaskLen, S_LEN)
        SCALAR_CASES(kScalarMaskBits, S_BITS)
        UNARY_CASES(kUnaryCount, U_COUNT, 0)
        UNARY_CASES(kUnaryMaskLen, U_LEN, 1)
    case kDupCount: WHEN(FILLS(T), Duplicate(dst, s, n)) break;
    case kDupMaskLen: WHEN(FILLS(T), Duplicate(dst, s, len, rep, p[kDstBlk], p[kDstRep])) break;
    case kDupMaskBits: WHEN(FILLS(T), Duplicate(dst, s, mask, rep, p[kDstBlk], p[kDstRep])) break;
    case kBrcb: Brcb(dst, src0, rep, BrcbRepeatParams(p[kDstBlk], p[kDstRep])); break;
    case kReduceSumCount: ReduceSum(dst, src0, src1, n); break;
    case kReduceSumMaskLen: ReduceSum(dst, src0, src1, int32_t(len), rep, p[kSrc0Rep]); break;
    case kReduceSumMaskBits: ReduceSum(dst, src0, src1, mask, rep, p[kSrc0Rep]); break;
    case kWholeMaskLen: WholeReduceSum(dst, src0, int32_t(len), rep, p[kDstRep], p[kSrc0Blk], p[kSrc0Rep]); break;
    case kWholeMaskBits: WholeReduceSum(dst, src0, mask, rep, p[kDstRep], p[kSrc0Blk], p[kSrc0Rep]); break;
    case kBlockMaskLen: BlockReduceSum(dst, src0, rep, int32_t(len), p[kDstRep], p[kSrc0Blk], p[kSrc0Rep]); break;
    case kBlockMaskBits: BlockReduceSum(dst, src0, rep, mask, p[kDstRep], p[kSrc0Blk], p[kSrc0Rep]); break;
    case kWholeCounter:
        SetMaskCount();
        SetVectorMask<T, MaskMode::COUNTER>(0, uint64_t(n));
        WholeReduceSum<T, false>(dst, src0, 0, 1, p[kDstRep], p[kSrc0Blk], p[kSrc0Rep]);
        SetMaskNorm();
        ResetMask();
        break;
    default: IssueReduce<T>(p, dst, src0, src1, mask); break;
    }
}

template <typename T>
void Run(const int32_t *p, GM_ADDR a, GM_ADDR b, GM_ADDR d)
{
    TPipe pipe;
    TBuf<QuePosition::VECCALC> bufA, bufB, bufD;
    pipe.InitBuffer(bufA, p[kBufBytes]);
    pipe.InitBuffer(bufB, p[kBufBytes]);
    pipe.InitBuffer(bufD, p[kBufBytes]);
    LocalTensor<T> A = bufA.Get<T>(), B = bufB.Get<T>(), D = bufD.Get<T>();
    GlobalTensor<T> ga, gb, gd;
    ga.SetGlobalBuffer((__gm__ T *)a);
    gb.SetGlobalBuffer((__gm__ T *)b);
    gd.SetGlobalBuffer((__gm__ T *)d);
    if (p[kDefinedA] > 0) DataCopy(A, ga, p[kDefinedA]);
    if (p[kLenB] > 0) DataCopy(B, gb, p[kLenB]);
    if (p[kLenD] > 0) DataCopy(D, gd, p[kLenD]);
    PipeBarrier<PIPE_ALL>();
    const LocalTensor<T> src0 = (p[kAlias] & 1) ? D[p[kOffA]] : A[p[kOffA]];
    const LocalTensor<T> src1 = (p[kAlias] & 2) ? D[p[kOffB]] : B[p[kOffB]];
    Issue<T>(p, D[p[kOffD]], src0, src1);
    PipeBarrier<PIPE_ALL>();
    if (p[kLenD] > 0) DataCopy(gd, D, p[kLenD]);
}

extern "C" __global__ __aicore__ void vector_driver(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, kSlots);
    int32_t p[kSlots];
    for (int32_t i = 0; i < kSlots; ++i) p[i] = pg.GetValue(i);
    switch (p[kDtype]) {
    case 0: Run<half>(p, a, b, d); break;
    case 1: Run<float>(p, a, b, d); break;
    case 2: Run<int16_t>(p, a, b, d); break;
    case 3: Run<int32_t>(p, a, b, d); break;
    case 4: Run<bfloat16_t>(p, a, b, d); break;
    default: break;
    }
}
