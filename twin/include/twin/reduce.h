// Reductions (declarations; definitions follow in the next commit).
#pragma once
#include "vector.h"

namespace AscendC {

template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal,
               const int32_t count);
template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,
                    const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride);
template <typename T, bool isSetMask = true>
void BlockReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTimes,
                    const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride);

}  // namespace AscendC
