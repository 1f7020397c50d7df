// Sum reductions of the twin: ReduceSum (count and repeat forms), WholeReduceSum (one sum per
// repeat; ReduceRepeat<SUM> in newer CANN) and BlockReduceSum (one sum per 32-byte block;
// ReduceDataBlock<SUM>). A2 supports half and float.
//
// Summation order, from the public Ascend C documentation (ReduceSum "关键特性说明",
// ReduceDataBlock "关键特性说明"): within a repeat (and within a block) elements are added by a
// binary tree of neighbours: (e0+e1), (e2+e3), ... then those pairs pairwise, and so on; a lane
// the mask switches off takes no part (its partner passes up unchanged). On Atlas A2/A3 the count
// form of ReduceSum adds the per-repeat sums in order ("方式一"), the repeat form adds them by the
// same binary tree, 64/128 repeat sums per level ("方式二"). Every addition rounds to T (half sums
// are rounded to half at each step). The twin reproduces these orders bit for bit.
// A result is defined only if every lane summed into it is (a poisoned lane reaching it makes it
// undefined, and copying it to GM is then an error).
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

// One sum per group of `group_lanes` neighbouring lanes, a repeat's groups written one after
// another from dst + r * dstRepStride * (one repeat's results): WholeReduceSum / ReduceRepeat<SUM>
// (the whole repeat is one group), BlockReduceSum / ReduceDataBlock<SUM> (one group per 32-byte
// block) and PairReduceSum / ReducePairElem<SUM> (pairs). A group without active lanes leaves dst
// as it was.
template <typename T>
void GroupSums(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
               const LanePlan &p, int64_t dstRepStride, int64_t srcBlkStride, int64_t srcRepStride, uint32_t group_lanes)
{
    dst.Check(call);
    src.Check(call);
    CheckReduceType<T>(call);
    CheckStride(call, "dstRepStride", uint64_t(dstRepStride), 16);
    CheckStride(call, "srcBlkStride", uint64_t(srcBlkStride), 16);
    CheckStride(call, "srcRepStride", uint64_t(srcRepStride), 16);
    const VecOperand s = Operand("src", src, uint32_t(srcBlkStride), uint32_t(srcRepStride));
    CheckPlacement(call, s, p);
    const uint32_t groups = p.lanes / group_lanes, d0 = dst.ByteOffset();
    // A2: the element (whole repeat), 16 / 32 bytes (half / float block sums), 32 bytes (pair sums)
    const uint32_t align = std::min<uint32_t>(groups * sizeof(T), kUbBlockBytes);
    TWIN_CHECK(d0 % align == 0, call, "dst must be ", align, "-byte aligned for ", TypeName<T>(), " (byte offset ", d0, ")");
    const uint64_t step = uint64_t(dstRepStride) * groups * sizeof(T);
    const uint64_t need = p.repeats ? (p.repeats - 1) * step + groups * sizeof(T) : 0;
    TWIN_CHECK(need <= dst.BytesToBufferEnd(), call, "dst must hold ", groups, " result(s) per repeat, dstRepStride x ",
               groups, " elements apart, inside its buffer (needs ", need, " bytes, the buffer has ",
               dst.BytesToBufferEnd(), ")");
    CheckReduceOverlap(call, d0, step, groups * sizeof(T), s, p);
    if (p.Empty()) return;
    const VecOperand ops[2] = {Operand("dst", dst), s};
    VectorPipeAccess(call, ops);
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    if (groups == 1) {
        thread_local std::vector<float> sums;
        thread_local std::vector<uint8_t> any, defined;
        RepeatSums<T>(s, p, sums, any, defined);
        for (uint32_t r = 0; r < p.repeats; ++r) {
            const T sum = T(sums[r]);
            if (any[r]) WriteResult(static_cast<uint32_t>(d0 + r * step), &sum, sizeof(T), defined[r]);
        }
        return;
    }
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        for (uint32_t g = 0; g < groups; ++g) {
            bool any = false, defined = true;
            const T sum = T(LaneTree<T>(s, r, g * group_lanes, group_lanes, m, any, defined));
            if (any) WriteResult(static_cast<uint32_t>(d0 + r * step + g * sizeof(T)), &sum, sizeof(T), defined);
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

// ReduceSum: the sum of all selected lanes into dst[0]. in_order: the count form (repeat sums
// added one after another); otherwise the repeat form (repeat sums written to work, then a tree).
template <typename T>
void SumAll(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
            const AscendC::LocalTensor<T> &work, const LanePlan &p, int64_t srcRepStride, bool in_order)
{
    const VecOperand s = WholeTensorOperands(call, dst, src, work, p, srcRepStride);
    TWIN_CHECK(dst.BytesToBufferEnd() >= sizeof(T), call, "dst must have room for the result inside its buffer");
    TWIN_CHECK(work.ByteOffset() % kUbBlockBytes == 0, call, "workLocal must start 32-byte aligned in UB (byte offset ",
               work.ByteOffset(), ")");
    const uint32_t per_block = kUbBlockBytes / sizeof(T);
    const uint64_t work_bytes = in_order ? 0 : uint64_t((p.repeats + per_block - 1) / per_block) * kUbBlockBytes;
    TWIN_CHECK(work_bytes <= work.BytesToBufferEnd(), call, "workLocal must hold the ", p.repeats,
               " repeat sums rounded up to a whole block (needs ", work_bytes, " bytes, the buffer has ",
               work.BytesToBufferEnd(), ")");
    if (p.Empty()) return;
    const VecOperand ops[2] = {Operand("dst", dst), s};
    VectorPipeAccess(call, ops);
    if (!in_order) PipeAccess(call, work.Slot(), Pipe::V, true);  // the count form leaves workLocal unused
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, VecClass::kReduce);
    thread_local std::vector<float> repeat_sums;  // reused: ReduceSum runs once per tile
    thread_local std::vector<uint8_t> any, repeat_defined;
    RepeatSums<T>(s, p, repeat_sums, any, repeat_defined);
    const float *sum_of = repeat_sums.data();
    const uint8_t *ran = any.data(), *defined_of = repeat_defined.data();
    bool defined = true, first = true;
    float acc = 0.0f;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        if (!ran[r]) continue;
        acc = first ? sum_of[r] : RoundTo<T>(acc + sum_of[r]);
        first = false;
        defined = defined && defined_of[r];
    }
    if (!in_order) {  // the repeat form keeps the repeat sums in workLocal, then sums them by tree
        std::vector<float> sums;
        for (uint32_t r = 0; r < p.repeats; ++r) {
            if (!ran[r]) continue;
            const T v = T(sum_of[r]);
            WriteResult(static_cast<uint32_t>(work.ByteOffset() + sums.size() * sizeof(T)), &v, sizeof(T), defined_of[r]);
            sums.push_back(sum_of[r]);
        }
        acc = TreeOfList<T>(sums, p.lanes);
    }
    const T result = T(acc);
    WriteResult(dst.ByteOffset(), &result, sizeof(T), defined);
    if (in_order) {  // the count form reads its result from the sum register, which keeps it
        CoreState &core = Core();
        std::memcpy(&core.reduce_sum_spr, &result, sizeof(T));
        core.reduce_sum_spr_bytes = defined ? sizeof(T) : 0;
    }
}

}  // namespace twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal, const int32_t count)
{
    const int64_t most = twin::Core().soc->ub_bytes / sizeof(T);
    TWIN_CHECK(count >= 1 && count <= most, "ReduceSum", "count must be in [1, UB bytes / sizeof(T)] = [1, ", most,
               "] (got ", count, ")");
    twin::SumAll("ReduceSum", dst, src, workLocal, twin::CountFormPlan("ReduceSum", twin::Lanes<T>(), count, isSetMask), 8,
                 true);
    if (isSetMask) twin::RestoreDefaultMask();
}

// The sum the last count-form ReduceSum of this core left in its register.
template <typename T>
T GetReduceRepeatSumSpr()
{
    const twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.reduce_sum_spr_bytes != 0, "GetReduceRepeatSumSpr",
               "reads the result of the count form of ReduceSum, and none with a defined result ran on this core");
    TWIN_CHECK(core.reduce_sum_spr_bytes == sizeof(T), "GetReduceRepeatSumSpr", "T must be the ReduceSum's type (",
               int(core.reduce_sum_spr_bytes), "-byte result read as ", twin::TypeName<T>(), ")");
    T value;
    std::memcpy(&value, &core.reduce_sum_spr, sizeof(T));
    return value;
}

// The mask forms always set the mask themselves: unlike the element-wise ones they have no isSetMask.
template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal, const int32_t mask,
               const int32_t repeatTime, const int32_t srcRepStride)
{
    uint64_t bits[2];
    twin::ContinuousMaskBits("ReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::SumAll("ReduceSum", dst, src, workLocal,
                 twin::RepeatPlan("ReduceSum", twin::Lanes<T>(), repeatTime, bits, true, INT32_MAX), srcRepStride, false);
}

template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &workLocal,
               const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride)
{
    twin::SumAll("ReduceSum", dst, src, workLocal,
                 twin::RepeatPlan("ReduceSum", twin::Lanes<T>(), repeatTime, mask, true, INT32_MAX), srcRepStride, false);
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask, const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("WholeReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::GroupSums("WholeReduceSum", dst, src, twin::RepeatPlan("WholeReduceSum", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::Lanes<T>());
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::GroupSums("WholeReduceSum", dst, src, twin::RepeatPlan("WholeReduceSum", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::Lanes<T>());
}

// Note the argument order of the older API: repeatTime before mask.
template <typename T, bool isSetMask = true>
void BlockReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const int32_t mask,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    uint64_t bits[2];
    if (isSetMask) twin::ContinuousMaskBits("BlockReduceSum", twin::Lanes<T>(), uint64_t(uint32_t(mask)), bits);
    twin::GroupSums("BlockReduceSum", dst, src, twin::RepeatPlan("BlockReduceSum", twin::Lanes<T>(), repeatTime, bits, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::kUbBlockBytes / sizeof(T));
}

template <typename T, bool isSetMask = true>
void BlockReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime, const uint64_t mask[],
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride)
{
    twin::GroupSums("BlockReduceSum", dst, src, twin::RepeatPlan("BlockReduceSum", twin::Lanes<T>(), repeatTime, mask, isSetMask),
                   dstRepStride, srcBlkStride, srcRepStride, twin::kUbBlockBytes / sizeof(T));
}

}  // namespace AscendC
