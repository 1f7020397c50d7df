// Vector compute (declarations; definitions follow in the next commit).
#pragma once
#include <cstdint>

#include "memory.h"
#include "types.h"

namespace AscendC {

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER = 1 };

struct BinaryRepeatParams {
    uint32_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint32_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
};
struct UnaryRepeatParams {
    uint32_t dstBlkStride = 1, srcBlkStride = 1;
    uint32_t dstRepStride = 8, srcRepStride = 8;
};
struct BrcbRepeatParams {
    uint32_t dstBlkStride = 1, dstRepStride = 8;
};

void SetMaskNorm();
void SetMaskCount();
void ResetMask();
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(uint64_t maskHigh, uint64_t maskLow);
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(int32_t len);

#define TWIN_DECLARE_BINARY(Name)                                                                         \
    template <typename T>                                                                                 \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,         \
              const int32_t &count);                                                                      \
    template <typename T, bool isSetMask = true>                                                          \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,         \
              uint64_t mask, uint32_t repeatTimes, const BinaryRepeatParams &params);                     \
    template <typename T, bool isSetMask = true>                                                          \
    void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,         \
              const uint64_t mask[], uint32_t repeatTimes, const BinaryRepeatParams &params);
TWIN_DECLARE_BINARY(Add)
TWIN_DECLARE_BINARY(Sub)
TWIN_DECLARE_BINARY(Mul)
TWIN_DECLARE_BINARY(Div)
TWIN_DECLARE_BINARY(Max)
TWIN_DECLARE_BINARY(Min)
#undef TWIN_DECLARE_BINARY

template <typename T>
void Duplicate(const LocalTensor<T> &dst, const T &scalar, const int32_t &count);

}  // namespace AscendC
