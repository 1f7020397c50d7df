// SPDX-License-Identifier: BSD-3-Clause
// The machinery shared by every vector instruction of the twin (vector.h, reduce.h, cast.h): which
// lanes run (mask and repeat, or counter mode), where each operand's lanes live in UB (block and
// repeat strides), the rule checks every instruction makes, and the walk over contiguous runs of
// lanes that the element kernels are applied to.
//
// Semantics follow the public Ascend C documentation (SIMD-API, "Memory矢量计算/SIMD计算说明"):
// one repeat reads 8 DataBlocks of 32 bytes; lane l of a repeat lies in block l*size/32; a
// block's address is base + r*repStride*32 + b*blkStride*32; in Normal mode the mask selects lanes
// of every repeat, in Counter mode the mask register holds the total number of lanes and the
// repeat count is derived from it. The overlap rules are those of "通用地址重叠约束".
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "memory.h"
#include "types.h"

namespace AscendC {
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER = 1 };
inline constexpr uint64_t MASK_PLACEHOLDER = 0;
}  // namespace AscendC

namespace twin {

template <typename T>
constexpr const char *TypeName()
{
    if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else return "an unsupported type";
}

template <typename T, typename... Ts>
constexpr bool kIsOneOf = (std::is_same_v<T, Ts> || ...);

// Mask bits of the first `len` lanes.
inline void LaneBits(uint32_t len, uint64_t out[2])
{
    out[0] = len >= 64 ? ~0ull : (1ull << len) - 1;
    out[1] = len >= 128 ? ~0ull : len > 64 ? (1ull << (len - 64)) - 1 : 0;
}

// Which lanes an instruction runs.
struct LanePlan {
    uint32_t repeats = 0;
    uint32_t lanes = 0;             // lanes per repeat: 256 bytes / the widest operand element
    uint64_t mask[2] = {0, 0};      // Normal mode: lanes of every repeat
    bool counter = false;           // Counter mode: the first `count` lanes, repeat by repeat
    uint64_t count = 0;

    bool Empty() const { return repeats == 0 || (counter ? count == 0 : (mask[0] | mask[1]) == 0); }
    uint64_t ActiveLanes() const
    {
        if (counter) return count;
        return uint64_t(repeats) * (__builtin_popcountll(mask[0]) + __builtin_popcountll(mask[1]));
    }
    // Mask bits of repeat r.
    void RepeatMask(uint32_t r, uint64_t out[2]) const
    {
        if (!counter) {
            out[0] = mask[0];
            out[1] = mask[1];
            return;
        }
        const uint64_t done = uint64_t(r) * lanes;
        LaneBits(static_cast<uint32_t>(count - done < lanes ? count - done : lanes), out);
    }
    bool FullMask() const
    {
        return mask[0] == ~0ull && (lanes <= 64 || mask[1] == (lanes >= 128 ? ~0ull : (1ull << (lanes - 64)) - 1));
    }
};

// Counter-mode plan of the "first n elements" (count) form.
inline LanePlan CountPlan(uint32_t lanes, uint64_t n)
{
    LanePlan p;
    p.lanes = lanes;
    p.counter = true;
    p.count = n;
    p.repeats = static_cast<uint32_t>((n + lanes - 1) / lanes);
    return p;
}

// Plan of a repeat-form call. `bits` is the mask the call passes (nullptr with isSetMask = false:
// the core's mask registers apply). With isSetMask = true the call also loads the registers.
inline LanePlan RepeatPlan(const char *call, uint32_t lanes, int64_t repeat_times, const uint64_t *bits,
                           bool is_set_mask, uint32_t max_repeat = kMaxRepeat)
{
    CoreState &core = Core();
    LanePlan p;
    p.lanes = lanes;
    if (is_set_mask) {  // Counter mode keeps the count in the low word; 32-bit lanes use one word
        core.mask[0] = bits[0];
        core.mask[1] = core.mask_count_mode || lanes <= 64 ? 0 : bits[1];
    }
    if (core.mask_count_mode) {  // the repeat count comes from the element count; repeatTime is ignored
        p.counter = true;
        p.count = core.mask[0];
        p.repeats = static_cast<uint32_t>((p.count + lanes - 1) / lanes);
        return p;
    }
    TWIN_CHECK(repeat_times >= 0 && repeat_times <= max_repeat, call, "repeatTime must be in [0, ", max_repeat,
               "] (got ", repeat_times, ")");
    p.repeats = static_cast<uint32_t>(repeat_times);
    p.mask[0] = core.mask[0];
    p.mask[1] = lanes > 64 ? core.mask[1] : 0;
    return p;
}

// The continuous mask form: the first `len` lanes of every repeat (Normal mode).
inline void ContinuousMaskBits(const char *call, uint32_t lanes, uint64_t len, uint64_t out[2])
{
    if (Core().mask_count_mode) {  // Counter mode: the value is the element count
        out[0] = len;
        out[1] = 0;
        return;
    }
    TWIN_CHECK(len <= lanes, call, "a continuous mask counts lanes of one repeat and must be in [0, ", lanes,
               "] for this type (got ", len, ")");
    LaneBits(static_cast<uint32_t>(len), out);
}

// After a count-form call the API leaves the mask registers in their defaults (ResetMask, Normal).
inline void RestoreDefaultMask()
{
    CoreState &core = Core();
    core.mask_count_mode = false;
    core.mask[0] = core.mask[1] = ~0ull;
}

// One operand as the hardware addresses it.
struct VecOperand {
    const char *role = "dst";
    BufferSlot *slot = nullptr;
    uint32_t offset = 0;      // UB byte offset of its first element
    uint32_t elem = 4;        // bytes per element
    uint32_t blk = 1;         // blocks between the blocks of one repeat
    uint32_t rep = 8;         // blocks between repeats
    uint32_t to_end = 0;      // bytes from offset to the end of its buffer
    uint32_t align = kUbBlockBytes;

    uint64_t LaneByte(uint32_t r, uint32_t lane) const
    {
        const uint32_t in_repeat = lane * elem;
        return uint64_t(offset) + uint64_t(r) * rep * kUbBlockBytes + uint64_t(in_repeat / kUbBlockBytes) * blk * kUbBlockBytes +
               in_repeat % kUbBlockBytes;
    }
    bool Contiguous(const LanePlan &p) const { return blk == 1 && uint64_t(rep) * kUbBlockBytes == uint64_t(p.lanes) * elem; }
};

template <typename T>
VecOperand Operand(const char *role, const AscendC::LocalTensor<T> &t, uint32_t blk = 1, uint32_t rep = 8)
{
    VecOperand o;
    o.role = role;
    o.slot = t.Slot();
    o.offset = t.ByteOffset();
    o.elem = sizeof(T);
    o.blk = blk;
    o.rep = rep;
    o.to_end = t.BytesToBufferEnd();
    return o;
}

inline int HighestBit(const uint64_t m[2]) { return m[1] ? 127 - __builtin_clzll(m[1]) : m[0] ? 63 - __builtin_clzll(m[0]) : -1; }
inline int LowestBit(const uint64_t m[2]) { return m[0] ? __builtin_ctzll(m[0]) : m[1] ? 64 + __builtin_ctzll(m[1]) : -1; }

// Bytes [first, end) an operand touches under the plan (end = first when no lane runs).
inline void Footprint(const VecOperand &o, const LanePlan &p, uint64_t &first, uint64_t &end)
{
    first = end = o.offset;
    if (p.Empty()) return;
    uint64_t m[2];
    p.RepeatMask(0, m);
    first = o.blk ? o.LaneByte(0, LowestBit(m)) : o.offset;
    const uint32_t per_block = kUbBlockBytes / o.elem;
    for (uint32_t r = p.repeats >= 2 ? p.repeats - 2 : 0; r < p.repeats; ++r) {  // offsets grow with r
        p.RepeatMask(r, m);
        const int h = HighestBit(m);
        if (h < 0) continue;
        // With blkStride >= 1 the highest lane lies furthest; with 0 every block folds onto the first.
        const uint64_t last = o.blk ? o.LaneByte(r, h) + o.elem
                                    : o.LaneByte(r, 0) + std::min<uint32_t>(uint32_t(h) + 1, per_block) * o.elem;
        end = std::max(end, last);
    }
}

// Alignment and buffer-footprint rules of one operand.
inline void CheckPlacement(const char *call, const VecOperand &o, const LanePlan &p)
{
    TWIN_CHECK(o.offset % o.align == 0, call, "the ", o.role, " operand must start ", o.align,
               "-byte aligned in UB (byte offset ", o.offset, ")");
    uint64_t first, end;
    Footprint(o, p, first, end);
    TWIN_CHECK(end - o.offset <= o.to_end, call, "the ", o.role,
               " operand's footprint (repeats x strides x mask) must stay inside its buffer (needs ", end - o.offset,
               " bytes from its start, the buffer has ", o.to_end, ")");
}

inline void CheckStride(const char *call, const char *name, uint64_t value, unsigned bits)
{
    TWIN_CHECK(value < (1ull << bits), call, name, " must fit in ", bits, " bits (got ", value, ")");
}

// Visits the 32-byte blocks (as UB block indices) operand `o` touches in repeat r.
template <typename Fn>
void ForEachBlock(const VecOperand &o, const LanePlan &p, uint32_t r, Fn &&fn)
{
    uint64_t m[2];
    p.RepeatMask(r, m);
    const uint32_t per_block = kUbBlockBytes / o.elem;
    for (uint32_t l0 = 0; l0 < p.lanes; l0 += per_block) {
        const uint32_t word = l0 / 64, bit = l0 % 64;
        const uint64_t bits = per_block >= 64 ? m[word] : (m[word] >> bit) & ((1ull << per_block) - 1);
        if (bits) fn(uint32_t(o.LaneByte(r, l0) / kUbBlockBytes), l0 / per_block);
    }
}

// The address-overlap rules between the destination and one source. Within one repeat the two
// overlap 100% or not at all; across repeats no later repeat may read what an earlier one wrote,
// except the documented accumulation (dst on src1 with dstRepStride or src1RepStride 0).
// Cast between types of different sizes cannot overlap 100%; there (partial_ok) a repeat may
// overlap itself, since it reads all its sources before it writes.
inline void CheckOverlap(const char *call, const VecOperand &dst, const VecOperand &src, const LanePlan &p,
                         bool accumulation_allowed = false, bool partial_ok = false)
{
    uint64_t d0, d1, s0, s1;
    Footprint(dst, p, d0, d1);
    Footprint(src, p, s0, s1);
    if (d1 <= s0 || s1 <= d0) return;
    const bool same_lanes = dst.offset == src.offset && dst.elem == src.elem && dst.blk == src.blk;
    if (same_lanes && accumulation_allowed && (dst.rep == 0 || src.rep == 0)) return;
    if (same_lanes && dst.rep == src.rep) {
        // Identical addressing: each repeat updates its own lanes in place, which is fine unless
        // the repeats themselves overlap (then a later repeat reads an earlier one's result).
        const uint64_t repeat_span = dst.LaneByte(0, p.lanes - 1) + dst.elem - dst.offset;
        if (p.repeats <= 1 || uint64_t(dst.rep) * kUbBlockBytes >= repeat_span) return;
    }
    // Precise walk over blocks: which repeat of dst first writes each block, and as which of its
    // 8 blocks (repeat * 8 + position; repeats of a count form stay below 8192).
    std::vector<uint16_t> writer(Core().ub.size() / kUbBlockBytes, 0xFFFF);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        ForEachBlock(dst, p, r, [&](uint32_t b, uint32_t pos) {
            if (writer[b] == 0xFFFF) writer[b] = static_cast<uint16_t>(r * 8 + pos);
        });
    }
    for (uint32_t r = 0; r < p.repeats; ++r) {
        ForEachBlock(src, p, r, [&](uint32_t b, uint32_t pos) {
            if (writer[b] == 0xFFFF || writer[b] / 8u > r) return;
            const uint32_t w = writer[b] / 8u;
            TWIN_CHECK(w == r, call, "the ", src.role, " operand of repeat ", r, " reads what the ", dst.role,
                       " operand of repeat ", w,
                       " wrote: across repeats source and destination must not overlap (address overlap rule)");
            TWIN_CHECK(partial_ok || (same_lanes && writer[b] % 8u == pos), call, "the ", dst.role, " and ", src.role,
                       " operands overlap partially within repeat ", r,
                       ": within one repeat they must overlap 100% or not at all (address overlap rule)");
        });
    }
}

// Calls fn(offsets, n) for every run of n lanes that is contiguous in every operand, in repeat
// order; offsets[i] is operand i's UB byte offset of the run's first lane.
template <size_t N, typename Fn>
void ForEachRun(const LanePlan &p, const VecOperand (&ops)[N], Fn &&fn)
{
    uint32_t off[N];
    bool contiguous = p.counter || p.FullMask();
    for (const VecOperand &o : ops) contiguous = contiguous && o.Contiguous(p);
    if (contiguous) {  // one run: the fast path of count-form calls
        const uint64_t total = p.counter ? p.count : uint64_t(p.repeats) * p.lanes;
        for (size_t i = 0; i < N; ++i) off[i] = ops[i].offset;
        if (total) fn(off, static_cast<uint32_t>(total));
        return;
    }
    uint32_t widest = 1;
    for (const VecOperand &o : ops) widest = std::max(widest, o.elem);
    const uint32_t chunk = kUbBlockBytes / widest;  // lanes that share a block in every operand
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t m[2];
        p.RepeatMask(r, m);
        for (uint32_t l0 = 0; l0 < p.lanes; l0 += chunk) {
            uint64_t bits = (m[l0 / 64] >> (l0 % 64)) & (chunk >= 64 ? ~0ull : (1ull << chunk) - 1);
            while (bits) {
                const uint32_t start = __builtin_ctzll(bits);
                const uint32_t len = __builtin_ctzll(~(bits >> start));
                bits &= ~(((len >= 64 ? 0ull : (1ull << len)) - 1) << start);
                for (size_t i = 0; i < N; ++i) off[i] = static_cast<uint32_t>(ops[i].LaneByte(r, l0 + start));
                fn(off, len);
            }
        }
    }
}

// Marks the pipe accesses of an instruction: sources read, then the destination written.
// With the plan, each operand's footprint under it; without, its whole buffer.
template <size_t N>
void VectorPipeAccess(const char *call, const VecOperand (&ops)[N], const LanePlan *p = nullptr)
{
    uint64_t first[N] = {}, end[N] = {};
    for (size_t i = 0; p != nullptr && i < N; ++i) Footprint(ops[i], *p, first[i], end[i]);
    for (size_t i = 1; i < N; ++i) PipeAccess(call, ops[i].slot, Pipe::V, false, first[i], end[i]);
    PipeAccess(call, ops[0].slot, Pipe::V, true, first[0], end[0]);
}

// The prologue of every element-wise instruction once its own parameters passed: placement and
// overlap rules of all operands (ops[0] is the destination), then the pipe and counter hooks.
// Returns false when no lane runs (count, repeatTime or mask 0): the instruction is a NOP on A2.
template <size_t N>
bool Issue(const char *call, const VecOperand (&ops)[N], const LanePlan &p, int accumulating_src = -1,
           bool partial_ok = false, VecClass cls = VecClass::kElementwise)
{
    for (const VecOperand &o : ops) CheckPlacement(call, o, p);
    for (size_t i = 1; i < N; ++i) CheckOverlap(call, ops[0], ops[i], p, int(i) == accumulating_src, partial_ok);
    if (p.Empty()) return false;
    VectorPipeAccess(call, ops, &p);
    OnVector(p.repeats, p.ActiveLanes(), uint64_t(p.repeats) * p.lanes, cls);
    return true;
}

// d[i] = f(i) for i in [0, n), in fixed-width blocks that g++ -O2 vectorises (its cheap cost model
// leaves loops of unknown length scalar). Each block is computed before it is stored, so d may be
// one of f's inputs (an in-place instruction).
template <unsigned W, typename T, typename F>
inline void MapBlocks(T *d, uint32_t n, F f)
{
    size_t i = 0;
    for (; i + W <= n; i += W) {
        T block[W];
        for (size_t k = 0; k < W; ++k) block[k] = f(i + k);
        for (size_t k = 0; k < W; ++k) d[i + k] = block[k];
    }
    for (; i < n; ++i) d[i] = f(i);
}

// Shadow of an element-wise result: a byte is defined iff it is in both sources.
inline void AndShadow(uint8_t *d, const uint8_t *a, const uint8_t *b, uint32_t n)
{
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {  // eight shadow bytes per 64-bit AND
        uint64_t x, y;
        std::memcpy(&x, a + i, 8);
        std::memcpy(&y, b + i, 8);
        x &= y;
        std::memcpy(d + i, &x, 8);
    }
    for (; i < n; ++i) d[i] = a[i] & b[i];
}

}  // namespace twin
