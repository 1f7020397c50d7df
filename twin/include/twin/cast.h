// Cast (declarations; definitions follow in the next commit).
#pragma once
#include "vector.h"

namespace AscendC {

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

template <typename T, typename U>
void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint32_t count);

}  // namespace AscendC
