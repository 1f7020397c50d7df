// SPDX-License-Identifier: BSD-3-Clause
// Sorting within UB (排序组合, ISASI): Sort32 and MrgSort (the MrgSort4Info form). Semantics from the
// public Ascend C documentation (Sort32, MrgSort): a sorted element is an 8-byte (score, index) pair,
// the score in the low bytes (float: 4 bytes; half: 2, then 2 reserved bytes) and the uint32_t index
// in the high 4 bytes. Sort32 sorts each group of 32 scores of src0 with their indices from src1 into
// descending order of score (iteration r reads 32 elements of src0 and of src1 and writes 256 bytes of
// dst, 32 pairs further on each). MrgSort merges up to 4 queues of pairs, each sorted that way, into
// one (descending); with repeatTimes > 1 it merges the next 4 contiguous queues into the next stretch
// of dst (only then: otherwise the documentation has the hardware ignore repeatTimes; the twin refuses
// such a call rather than merge fewer times than asked). Equal scores keep their order: the earlier
// element (for MrgSort, the earlier queue) first. A NaN score has no documented place in that order,
// so the twin refuses one. ifExhaustedSuspension stops a merge when one of its queues runs out.
// Cost (an assumption: no public figure per instruction): one vector repeat per 256 bytes of dst, as
// the element-wise instructions are charged.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "compare_select.h"

namespace AscendC {

constexpr int32_t MRG_SORT_ELEMENT_LEN = 4;

struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
                 const uint16_t validBitIn, const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(uint8_t(repeatTimesIn))
    {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};  // pairs per queue, each 8 bytes
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;  // 3, 7 or 15: the first 2, 3 or 4 queues take part
    uint8_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T> &src1In, const LocalTensor<T> &src2In, const LocalTensor<T> &src3In,
                   const LocalTensor<T> &src4In)
    {
        src1 = src1In[0];
        src2 = src2In[0];
        src3 = src3In[0];
        src4 = src4In[0];
    }
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

}  // namespace AscendC

namespace twin {

constexpr uint32_t kSortPairBytes = 8;
constexpr uint32_t kSortGroup = 32;

// One (score, index) pair as UB holds it, with the definedness of its 8 bytes.
struct SortPair {
    float score;
    uint8_t bytes[kSortPairBytes];
    uint8_t shadow[kSortPairBytes];
};

template <typename T>
float ScoreOf(const uint8_t *bytes)
{
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return float(v);
}

// The pair at UB byte `at`, its score defined and not NaN.
template <typename T>
SortPair ReadPair(const char *call, const char *what, uint32_t at, uint32_t i)
{
    const CoreState &core = Core();
    TWIN_CHECK(core.AllDefined(at, sizeof(T)), call, "the score of ", what, " pair ", i, " was never written");
    SortPair p;
    std::memcpy(p.bytes, core.ub.data() + at, kSortPairBytes);
    std::memcpy(p.shadow, core.shadow.data() + at, kSortPairBytes);
    p.score = ScoreOf<T>(p.bytes);
    TWIN_CHECK(!std::isnan(p.score), call, "the score of ", what, " pair ", i,
               " is NaN, which has no documented place in the order");
    return p;
}

inline void WritePairs(uint32_t at, const std::vector<SortPair> &pairs)
{
    CoreState &core = Core();
    for (size_t i = 0; i < pairs.size(); ++i) {
        std::memcpy(core.ub.data() + at + i * kSortPairBytes, pairs[i].bytes, kSortPairBytes);
        std::memcpy(core.shadow.data() + at + i * kSortPairBytes, pairs[i].shadow, kSortPairBytes);
    }
}

inline bool Overlap(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes)
{
    return a < b + b_bytes && b < a + a_bytes;
}

}  // namespace twin

namespace AscendC {

template <typename T>
void Sort32(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<uint32_t> &src1,
            const int32_t repeatTime)
{
    static_assert(twin::kIsOneOf<T, half, float>, "Sort32 on A2 takes half or float");
    const char *call = "Sort32";
    TWIN_CHECK(repeatTime >= 0 && repeatTime <= 255, call, "repeatTime must be in [0, 255] (got ", repeatTime, ")");
    const uint32_t n = uint32_t(repeatTime) * twin::kSortGroup;
    twin::CheckSpan(call, "dst", dst, uint64_t(n) * twin::kSortPairBytes);
    twin::CheckSpan(call, "src0", src0, uint64_t(n) * sizeof(T));
    twin::CheckSpan(call, "src1", src1, uint64_t(n) * sizeof(uint32_t));
    if (repeatTime == 0) return;  // a NOP on A2
    const uint64_t out = dst.ByteOffset(), out_bytes = uint64_t(n) * twin::kSortPairBytes;
    TWIN_CHECK(!twin::Overlap(out, out_bytes, src0.ByteOffset(), uint64_t(n) * sizeof(T)) &&
                   !twin::Overlap(out, out_bytes, src1.ByteOffset(), uint64_t(n) * sizeof(uint32_t)),
               call, "dst may not overlap src0 or src1");
    twin::PipeAccess(call, src0.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, src1.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    twin::OnVector(uint64_t(repeatTime), n);
    const twin::CoreState &core = twin::Core();
    std::vector<twin::SortPair> group(twin::kSortGroup);
    for (int32_t r = 0; r < repeatTime; ++r) {
        for (uint32_t i = 0; i < twin::kSortGroup; ++i) {
            const uint32_t e = uint32_t(r) * twin::kSortGroup + i;
            const uint32_t score_at = src0.ByteOffset() + e * sizeof(T), index_at = src1.ByteOffset() + e * 4;
            TWIN_CHECK(core.AllDefined(score_at, sizeof(T)), call, "score ", e, " of src0 was never written");
            twin::SortPair &p = group[i];
            std::memset(p.bytes, 0, sizeof p.bytes);
            std::memset(p.shadow, 0, sizeof p.shadow);
            std::memcpy(p.bytes, core.ub.data() + score_at, sizeof(T));
            std::memcpy(p.shadow, core.shadow.data() + score_at, sizeof(T));
            std::memcpy(p.bytes + 4, core.ub.data() + index_at, 4);
            std::memcpy(p.shadow + 4, core.shadow.data() + index_at, 4);
            if (sizeof(T) == 2) std::memset(p.shadow + 2, 1, 2);  // the reserved bytes, written as 0
            p.score = twin::ScoreOf<T>(p.bytes);
            TWIN_CHECK(!std::isnan(p.score), call, "score ", e,
                       " of src0 is NaN, which has no documented place in the order");
        }
        std::stable_sort(group.begin(), group.end(),
                         [](const twin::SortPair &a, const twin::SortPair &b) { return a.score > b.score; });
        twin::WritePairs(uint32_t(out + uint64_t(r) * twin::kSortGroup * twin::kSortPairBytes), group);
    }
}

template <typename T>
void MrgSort(const LocalTensor<T> &dst, const MrgSortSrcList<T> &src, const MrgSort4Info &params)
{
    static_assert(twin::kIsOneOf<T, half, float>, "MrgSort on A2 takes half or float");
    const char *call = "MrgSort";
    const uint16_t valid = params.validBit;
    TWIN_CHECK(valid == 3 || valid == 7 || valid == 15, call, "validBit must be 3, 7 or 15 (got ", valid, ")");
    const uint32_t queues = valid == 3 ? 2 : (valid == 7 ? 3 : 4);
    const LocalTensor<T> *list[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    uint64_t total = 0;
    for (uint32_t q = 0; q < queues; ++q) {
        TWIN_CHECK(params.elementLengths[q] <= 4095, call, "elementLengths[", q, "] must be in [0, 4095] (got ",
                   params.elementLengths[q], ")");
        total += params.elementLengths[q];
    }
    const uint32_t repeats = params.repeatTimes;
    if (repeats > 1) {
        const uint16_t len = params.elementLengths[0];
        bool contiguous = queues == 4 && !params.ifExhaustedSuspension;
        for (uint32_t q = 1; contiguous && q < 4; ++q) {
            contiguous = params.elementLengths[q] == len && list[q]->Slot() == list[0]->Slot() &&
                         list[q]->ByteOffset() == list[0]->ByteOffset() + q * len * twin::kSortPairBytes;
        }
        TWIN_CHECK(contiguous, call, "repeatTimes above 1 needs 4 valid queues (validBit 15) of one length, stored "
                   "one after another, and ifExhaustedSuspension false (otherwise the hardware ignores it and "
                   "merges once, which the twin refuses as a kernel bug)");
    }
    const uint64_t step = total * twin::kSortPairBytes;
    twin::CheckSpan(call, "dst", dst, repeats * step);
    for (uint32_t q = 0; q < queues; ++q) {
        const uint64_t span = repeats > 1 ? (repeats - 1) * step + params.elementLengths[q] * twin::kSortPairBytes
                                          : params.elementLengths[q] * twin::kSortPairBytes;
        twin::CheckSpan(call, "source queue", *list[q], span, twin::kSortPairBytes);
        TWIN_CHECK(!twin::Overlap(dst.ByteOffset(), repeats * step, list[q]->ByteOffset(), span), call,
                   "dst may not overlap a source queue (queue ", q + 1, ")");
    }
    if (repeats == 0) return;  // a NOP on A2
    for (uint32_t q = 0; q < queues; ++q) twin::PipeAccess(call, list[q]->Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    twin::OnVector((repeats * step + twin::kRepeatBytes - 1) / twin::kRepeatBytes, repeats * total);
    const char *names[4] = {"queue 1", "queue 2", "queue 3", "queue 4"};
    for (uint32_t r = 0; r < repeats; ++r) {
        std::vector<twin::SortPair> merged;
        uint32_t next[4] = {0, 0, 0, 0};
        while (true) {
            int32_t pick = -1;
            twin::SortPair best{};
            bool exhausted = false;
            for (uint32_t q = 0; q < queues; ++q) {
                if (next[q] >= params.elementLengths[q]) {
                    exhausted = true;
                    continue;
                }
                const uint32_t at = uint32_t(list[q]->ByteOffset() + r * step + next[q] * twin::kSortPairBytes);
                const twin::SortPair head = twin::ReadPair<T>(call, names[q], at, next[q]);
                if (pick < 0 || head.score > best.score) {  // on a tie the earlier queue stays
                    pick = int32_t(q);
                    best = head;
                }
            }
            if (pick < 0 || (exhausted && params.ifExhaustedSuspension)) break;
            merged.push_back(best);
            ++next[pick];
        }
        twin::WritePairs(uint32_t(dst.ByteOffset() + r * step), merged);
    }
}

}  // namespace AscendC
