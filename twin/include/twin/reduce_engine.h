// SPDX-License-Identifier: BSD-3-Clause
// What the reductions share (reduce.h, reduce_minmax.h, reduce_typed.h): the binary-tree sums in the
// order reduce.h describes, bit for bit, with each result's definedness, and the rules every
// reduction applies to its operands (type, overlap across repeats, whole-tensor operands).
#pragma once
#include "vector.h"

namespace twin {

template <typename T>
inline float RoundTo(float x)
{
    if constexpr (std::is_same_v<T, half>) return HalfBitsToFloat(FloatToHalfRne(x));
    else return x;
}

// Binary-tree sum of the present values of v[0..n) (n a power of two); clobbers v and present.
template <typename T>
float TreeSum(float *v, uint8_t *present, uint32_t n, bool &any)
{
    bool full = true;
    for (uint32_t i = 0; i < n; ++i) full = full && present[i];
    if (full) {  // the common case, without the per-lane presence tests
        for (uint32_t w = n; w > 1; w /= 2) {
            for (uint32_t i = 0; i < w / 2; ++i) v[i] = RoundTo<T>(v[2 * i] + v[2 * i + 1]);
        }
        any = n > 0;
        return v[0];
    }
    for (uint32_t w = n; w > 1; w /= 2) {
        for (uint32_t i = 0; i < w / 2; ++i) {
            const bool a = present[2 * i], b = present[2 * i + 1];
            v[i] = a && b ? RoundTo<T>(v[2 * i] + v[2 * i + 1]) : a ? v[2 * i] : v[2 * i + 1];
            present[i] = a || b;
        }
    }
    any = present[0];
    return v[0];
}

inline bool LanesAllOn(const uint64_t m[2], uint32_t l0, uint32_t n)
{
    for (uint32_t l = l0; l < l0 + n;) {
        const uint32_t bit = l % 64, k = std::min<uint32_t>(64 - bit, l0 + n - l);
        const uint64_t want = k == 64 ? ~0ull : ((1ull << k) - 1) << bit;
        if ((m[l / 64] & want) != want) return false;
        l += k;
    }
    return true;
}

// Tree sum of the lanes [l0, l0 + n) of repeat r of `src` selected by mask bits m; `defined`
// becomes false if any of them is undefined.
template <typename T>
float LaneTree(const VecOperand &src, uint32_t r, uint32_t l0, uint32_t n, const uint64_t m[2], bool &any, bool &defined)
{
    float v[128];
    uint8_t present[128];
    const CoreState &core = Core();
    if (src.blk == 1 && LanesAllOn(m, l0, n)) {
        // contiguous lanes: one definedness test for all of them
        const uint64_t at = src.LaneByte(r, l0);
        const T *x = reinterpret_cast<const T *>(core.ub.data() + at);
        for (uint32_t i = 0; i < n; ++i) {
            v[i] = float(x[i]);
            present[i] = 1;
        }
        defined = defined && core.AllDefined(static_cast<uint32_t>(at), n * sizeof(T));
        return TreeSum<T>(v, present, n, any);
    }
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t l = l0 + i;
        present[i] = (m[l / 64] >> (l % 64)) & 1;
        if (!present[i]) continue;
        const uint64_t at = src.LaneByte(r, l);
        T x;
        std::memcpy(&x, core.ub.data() + at, sizeof(T));
        v[i] = float(x);
        defined = defined && core.AllDefined(static_cast<uint32_t>(at), sizeof(T));
    }
    return TreeSum<T>(v, present, n, any);
}

// The tree sums of repeats [0, full) whose lanes are all active and contiguous in UB (the hot path
// of ReduceSum over a tile): level by level over all repeats at once, in vectorisable blocks.
// Neighbours pair up within a repeat at every level because a repeat is a power of two lanes.
template <typename T>
void ContiguousRepeatSums(const T *x, uint32_t full, uint32_t lanes, float *out)
{
    thread_local std::vector<float> ping, pong;
    uint32_t m = full * lanes / 2;
    ping.resize(m);
    pong.resize(m / 2 + 1);
    float *cur = ping.data(), *next = pong.data();
    MapBlocks<8>(cur, m, [&](size_t j) { return RoundTo<T>(float(x[2 * j]) + float(x[2 * j + 1])); });
    for (; m > full; m /= 2) {
        MapBlocks<8>(next, m / 2, [&](size_t j) { return RoundTo<T>(cur[2 * j] + cur[2 * j + 1]); });
        std::swap(cur, next);
    }
    std::memcpy(out, cur, full * sizeof(float));
}

// Sum, "any lane active" and definedness of every repeat of the plan.
template <typename T>
void RepeatSums(const VecOperand &s, const LanePlan &p, std::vector<float> &sums, std::vector<uint8_t> &any,
                std::vector<uint8_t> &defined)
{
    sums.assign(p.repeats, 0.0f);
    any.assign(p.repeats, 0);
    defined.assign(p.repeats, 1);
    const CoreState &core = Core();
    uint32_t full = 0;
    if (s.Contiguous(p) && (p.counter || p.FullMask()) && p.lanes >= 2) {
        full = p.counter ? static_cast<uint32_t>(p.count / p.lanes) : p.repeats;
        const uint32_t bytes = full * p.lanes * sizeof(T);
        ContiguousRepeatSums(reinterpret_cast<const T *>(core.ub.data() + s.offset), full, p.lanes, sums.data());
        const bool all_defined = core.AllDefined(s.offset, bytes);
        for (uint32_t r = 0; r < full; ++r) {
            any[r] = 1;
            defined[r] = all_defined || core.AllDefined(s.offset + r * p.lanes * sizeof(T), p.lanes * sizeof(T));
        }
    }
    for (uint32_t r = full; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        bool a = false, d = true;
        sums[r] = LaneTree<T>(s, r, 0, p.lanes, m, a, d);
        any[r] = a;
        defined[r] = d;
    }
}

inline void WriteResult(uint32_t at, const void *value, uint32_t bytes, bool defined)
{
    CoreState &core = Core();
    std::memcpy(core.ub.data() + at, value, bytes);
    std::memset(core.shadow.data() + at, defined ? 1 : 0, bytes);
}

template <typename T>
void CheckReduceType(const char *call)
{
    TWIN_CHECK(kFloatType<T>, call, "A2 supports half and float for this reduction (got ", TypeName<T>(), ")");
}

// Overlap of a reduction: repeat r writes dst bytes [dst0 + r*step, + len). A repeat may overwrite
// its own sources (it reads them first), but no later repeat may read what an earlier one wrote.
inline void CheckReduceOverlap(const char *call, uint64_t dst0, uint64_t step, uint32_t len, const VecOperand &src,
                               const LanePlan &p)
{
    uint64_t s0, s1;
    Footprint(src, p, s0, s1);
    const uint64_t d1 = dst0 + (p.repeats ? (p.repeats - 1) * step : 0) + len;
    if (d1 <= s0 || s1 <= dst0) return;
    std::vector<uint16_t> writer(Core().ub.size() / 2, 0xFFFF);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint64_t b = dst0 + r * step; b < dst0 + r * step + len; b += 2) writer[b / 2] = std::min<uint16_t>(writer[b / 2], r);
    }
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        for (uint32_t l = 0; l < p.lanes; ++l) {
            if (!((m[l / 64] >> (l % 64)) & 1)) continue;
            const uint32_t w = writer[src.LaneByte(r, l) / 2];
            TWIN_CHECK(w == 0xFFFF || w >= r, call, "repeat ", r, " reads src that repeat ", w,
                       " already overwrote with its result: across repeats dst must not overlap a later repeat's "
                       "source (address overlap rule)");
        }
    }
}

// Binary tree over a list of values (repeat sums), `lanes` per level as one repeat would.
template <typename T>
float TreeOfList(std::vector<float> vals, uint32_t lanes)
{
    float v[128];
    uint8_t present[128];
    while (vals.size() > 1) {
        std::vector<float> next;
        for (size_t at = 0; at < vals.size(); at += lanes) {
            for (uint32_t i = 0; i < lanes; ++i) {
                present[i] = at + i < vals.size();
                v[i] = present[i] ? vals[at + i] : 0.0f;
            }
            bool any = false;
            next.push_back(TreeSum<T>(v, present, lanes, any));
        }
        vals.swap(next);
    }
    return vals.empty() ? 0.0f : vals[0];
}

// The rules every whole-tensor reduction (ReduceSum, ReduceMax, ReduceMin) applies to its
// operands; returns src as the repeats address it.
template <typename T>
VecOperand WholeTensorOperands(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                               const AscendC::LocalTensor<T> &work, const LanePlan &p, int64_t srcRepStride)
{
    dst.Check(call);
    src.Check(call);
    work.Check(call);
    CheckReduceType<T>(call);
    CheckStride(call, "srcRepStride", uint64_t(srcRepStride), 16);
    const VecOperand s = Operand("src", src, 1, uint32_t(srcRepStride));
    CheckPlacement(call, s, p);
    TWIN_CHECK(dst.ByteOffset() % sizeof(T) == 0, call, "dst must be ", sizeof(T), "-byte aligned (byte offset ",
               dst.ByteOffset(), ")");
    return s;
}

}  // namespace twin
