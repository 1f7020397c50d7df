// SPDX-License-Identifier: BSD-3-Clause
// DataCopy with SliceInfo: a strided sub-block of a multi-dimensional tensor moved between GM and UB.
// Dimension 0 is the contiguous one. In it a slice is runs of burstLen 32-byte blocks from startIndex
// on, `stride` elements apart (gap between a run's end and the next run's start), up to endIndex; in
// each higher dimension it is every (1 + stride)-th index from startIndex to endIndex. The call issues
// one copy per combination of higher-dimension indices, each of the dimension-0 runs, as CANN does,
// and each is charged on the timeline as one DataCopy (DataCopyPad where the GM gap is not whole
// 32-byte blocks: the same bytes move either way). The rules are those of the CPU-debug slice check.
// Shapes come from SliceInfo::shapeValue: the twin has no SetShapeInfo to take them from instead.
#pragma once
#include <cstdint>
#include <vector>

#include "data_copy.h"

namespace AscendC {

inline constexpr int32_t K_MAX_DIM = 8;
inline constexpr uint32_t MAX_SLICE_SIZE = 6 * 256;  // copies one call may issue

struct SliceInfo {
    SliceInfo() {}
    SliceInfo(uint32_t startIndexIn, uint32_t endIndexIn, uint32_t strideIn, uint32_t burstLenIn,
              uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn),
          shapeValue(shapeValueIn)
    {
    }
    uint32_t startIndex = 0;
    uint32_t endIndex = 31;
    uint32_t stride = 0;
    uint32_t burstLen = 32;  // dimension 0: 32-byte blocks per run; higher dimensions: 1
    uint32_t shapeValue = 0;
};

}  // namespace AscendC

namespace twin {

inline constexpr const char *kSliceCall = "DataCopy with SliceInfo";

// Element offset of each copy's first element, in CANN's order (lower dimensions vary fastest).
inline std::vector<uint64_t> SliceStarts(const AscendC::SliceInfo info[], uint32_t dims)
{
    std::vector<uint64_t> starts{info[0].startIndex};
    uint64_t pitch = 1;
    for (uint32_t i = 1; i < dims; ++i) {
        pitch *= info[i - 1].shapeValue;
        const uint32_t step = 1 + info[i].stride;
        const uint32_t n = (info[i].endIndex - info[i].startIndex + step) / step;
        std::vector<uint64_t> next;
        for (uint32_t j = 0; j < n; ++j) {
            for (uint64_t s : starts) {
                next.push_back(s + (info[i].startIndex + uint64_t(j) * step) * pitch);
            }
        }
        starts.swap(next);
    }
    return starts;
}

// Checks both descriptions and returns the dimension-0 runs of one copy (`gm_to_ub`: dst is the UB side).
template <typename T>
Blocks SliceBlocks(const AscendC::SliceInfo dst[], const AscendC::SliceInfo src[], uint32_t dims, bool gm_to_ub)
{
    TWIN_CHECK(dims >= 1 && dims <= uint32_t(AscendC::K_MAX_DIM), kSliceCall, "dimValue must be in [1, 8] (got ",
               dims, ")");
    TWIN_CHECK(src[0].shapeValue != 0, kSliceCall, "srcSliceInfo[0].shapeValue is 0, so the shapes would come from "
               "SetShapeInfo, which the twin does not model: give every dimension's shapeValue");
    for (uint32_t i = 0; i < dims; ++i) {
        TWIN_CHECK(dst[i].burstLen == src[i].burstLen, kSliceCall, "dstSliceInfo[", i, "].burstLen must equal srcSliceInfo[",
                   i, "].burstLen (", dst[i].burstLen, " != ", src[i].burstLen, ")");
        TWIN_CHECK(i == 0 || dst[i].burstLen == 1, kSliceCall, "burstLen of dimension ", i, " must be 1 (got ",
                   dst[i].burstLen, ")");
        for (const auto *side : {dst, src}) {
            const char *name = side == dst ? "dstSliceInfo" : "srcSliceInfo";
            TWIN_CHECK(side[i].startIndex < side[i].endIndex, kSliceCall, name, "[", i, "].startIndex must be less than "
                       "its endIndex (", side[i].startIndex, " >= ", side[i].endIndex, ")");
            TWIN_CHECK(side[i].endIndex < side[i].shapeValue, kSliceCall, name, "[", i, "].endIndex must be less than "
                       "the dimension's shapeValue (", side[i].endIndex, " >= ", side[i].shapeValue, ")");
        }
    }
    const uint64_t run = uint64_t(src[0].burstLen) * kUbBlockBytes;
    const uint64_t one = run / sizeof(T) + src[0].stride, total = src[0].endIndex - src[0].startIndex + 1 + src[0].stride;
    TWIN_CHECK(run > 0 && total % one == 0, kSliceCall, "srcSliceInfo[0] must cover whole runs: endIndex - startIndex + 1 "
               "+ stride (", total, ") must be a multiple of burstLen x 32 / sizeof(T) + stride (", one, ")");
    const AscendC::SliceInfo &ub = gm_to_ub ? dst[0] : src[0];
    TWIN_CHECK(ub.stride * sizeof(T) % kUbBlockBytes == 0, kSliceCall, "the UB side's dimension-0 stride must be whole "
               "32-byte blocks (", ub.stride, " elements of ", sizeof(T), " bytes)");
    const size_t n_src = SliceStarts(src, dims).size(), n_dst = SliceStarts(dst, dims).size();
    TWIN_CHECK(n_src == n_dst, kSliceCall, "both descriptions must give the same number of copies (src ", n_src, ", dst ",
               n_dst, ")");
    TWIN_CHECK(n_src <= AscendC::MAX_SLICE_SIZE, kSliceCall, "a call may issue at most MAX_SLICE_SIZE (1536) copies (",
               n_src, ")");
    const uint64_t count = total / one;
    TWIN_CHECK(count <= kMaxBlockCount, kSliceCall, "a copy has at most 4095 runs (", count, ")");
    return Blocks{uint32_t(count), run, run + src[0].stride * sizeof(T), run + dst[0].stride * sizeof(T)};
}

}  // namespace twin

namespace AscendC {

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1)
{
    const twin::Blocks b = twin::SliceBlocks<T>(dstSliceInfo, srcSliceInfo, dimValue, true);
    const std::vector<uint64_t> from = twin::SliceStarts(srcSliceInfo, dimValue), to = twin::SliceStarts(dstSliceInfo, dimValue);
    for (size_t i = 0; i < from.size(); ++i) {
        const LocalTensor<T> ub = dst[uint32_t(to[i])];
        twin::CheckUbOperand(twin::kSliceCall, ub, b.Span(b.dst_pitch, b.len), "destination");
        twin::CopyIn(twin::kSliceCall, ub, reinterpret_cast<const uint8_t *>(src.GetPhyAddr(from[i])), b, !src.BypassesL2());
    }
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1)
{
    const twin::Blocks b = twin::SliceBlocks<T>(dstSliceInfo, srcSliceInfo, dimValue, false);
    const std::vector<uint64_t> from = twin::SliceStarts(srcSliceInfo, dimValue), to = twin::SliceStarts(dstSliceInfo, dimValue);
    for (size_t i = 0; i < from.size(); ++i) {
        const LocalTensor<T> ub = src[uint32_t(from[i])];
        twin::CheckUbOperand(twin::kSliceCall, ub, b.Span(b.src_pitch, b.len), "source");
        twin::CopyOut(twin::kSliceCall, reinterpret_cast<uint8_t *>(dst.GetPhyAddr(to[i])), ub, b, !dst.BypassesL2());
    }
}

}  // namespace AscendC
