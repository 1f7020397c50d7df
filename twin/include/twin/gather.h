// SPDX-License-Identifier: BSD-3-Clause
// Gathers within UB: Gather (element by element, count form) and Gatherb (32-byte block by block),
// with GatherRepeatParams. Semantics from the public Ascend C documentation ("离散与聚合"):
// Gather: dst[i] = the element at byte srcBaseAddr + srcOffset[i] from src's start (offsets in
// bytes, aligned to the element, the address inside UB). Gatherb: in repeat r, block b of dst
// (at (r * dstRepStride + b * dstBlkStride) blocks from dst's start, dstBlkStride 0 taken as 1)
// receives the 32 bytes at byte offset[r * 8 + b] from src's start (32-byte aligned, inside UB).
// src and dst may not be the same memory. GatherMask: the src0 elements whose gather-mask bit is 1
// (bit i of the pattern, lowest bit first, for element i of a repeat; a built-in pattern 1-7 or a
// tensor of U, src1RepeatStride blocks apart per repeat), packed one after another into dst over
// all repeats, their number into rsvdCnt. A repeat takes 256 bytes of src0 (reduceMode false) or
// `mask` elements (reduceMode true, Counter mode as A2 does it: repeatTimes x mask in all); src0's
// elements lie src0BlockStride blocks apart within a repeat, src0RepeatStride blocks per repeat;
// the call leaves the mask in Normal mode. The mask forms of Gather are not in the twin yet.
// An offset must be defined (a poisoned offset addresses nothing in particular); a gathered lane
// is as defined as the bytes it came from.
// Cost (an assumption: no public figure per instruction): one vector repeat per 256 bytes of dst,
// as the element-wise instructions are charged.
#pragma once
#include "vector.h"

namespace AscendC {

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn)
    {
    }
    uint32_t blockNumber = 8;  // the fields below dstBlkStride are kept for the API; A2 ignores them
    uint16_t dstRepStride = 8;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn)
    {
    }
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
inline constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;  // A2

}  // namespace AscendC

namespace twin {

// The byte offset offsets[i] of a gather, read as the vector unit reads it.
inline uint32_t GatherOffset(const char *call, const AscendC::LocalTensor<uint32_t> &offsets, uint32_t i)
{
    const CoreState &core = Core();
    const uint32_t at = offsets.ByteOffset() + i * 4;
    TWIN_CHECK(core.AllDefined(at, 4), call, "offset ", i, " was never written (UB byte offset ", at, ")");
    uint32_t v;
    std::memcpy(&v, core.ub.data() + at, 4);
    return v;
}

// Copies `bytes` from UB byte `from` to `to`, definedness with them.
inline void MoveUb(uint32_t to, uint64_t from, uint32_t bytes)
{
    CoreState &core = Core();
    std::memmove(core.ub.data() + to, core.ub.data() + from, bytes);
    std::memmove(core.shadow.data() + to, core.shadow.data() + from, bytes);
}

template <typename T>
void CheckGatherOperands(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                         const AscendC::LocalTensor<uint32_t> &offsets, uint64_t dst_bytes, uint64_t offset_count)
{
    dst.Check(call);
    src.Check(call);
    offsets.Check(call);
    TWIN_CHECK(dst.ByteOffset() % kUbBlockBytes == 0, call, "dst must start 32-byte aligned in UB (byte offset ",
               dst.ByteOffset(), ")");
    TWIN_CHECK(src.ByteOffset() % kUbBlockBytes == 0, call, "src must start 32-byte aligned in UB (byte offset ",
               src.ByteOffset(), ")");
    TWIN_CHECK(offsets.ByteOffset() % kUbBlockBytes == 0, call,
               "the offset tensor must start 32-byte aligned in UB (byte offset ", offsets.ByteOffset(), ")");
    TWIN_CHECK(dst.Slot() != src.Slot() || dst.ByteOffset() != src.ByteOffset(), call,
               "src and dst may not be the same memory");
    TWIN_CHECK(dst_bytes <= dst.BytesToBufferEnd(), call, "dst must hold the gathered data inside its buffer (needs ",
               dst_bytes, " bytes, the buffer has ", dst.BytesToBufferEnd(), ")");
    TWIN_CHECK(offset_count * 4 <= offsets.BytesToBufferEnd(), call, "the offset tensor must hold ", offset_count,
               " offsets inside its buffer (the buffer has ", offsets.BytesToBufferEnd() / 4, ")");
}

// The UB byte a gather reads, after the rules on its offset: aligned to `align`, `bytes` inside UB.
inline uint64_t GatherSource(const char *call, uint32_t src0, uint64_t offset, uint32_t align, uint32_t bytes,
                             uint32_t i)
{
    TWIN_CHECK(offset % align == 0, call, "offset ", i, " must be a multiple of ", align, " bytes (got ", offset, ")");
    const uint64_t at = src0 + offset;
    TWIN_CHECK(at + bytes <= Core().ub.size(), call, "offset ", i, " addresses past the end of UB (src byte ", src0,
               " + ", offset, ")");
    return at;
}

}  // namespace twin

namespace AscendC {

template <typename T>
void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
            const uint32_t srcBaseAddr, const uint32_t count)
{
    static_assert(twin::kIsOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "Gather on A2 takes int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
    const char *call = "Gather";
    twin::CheckGatherOperands(call, dst, src, srcOffset, uint64_t(count) * sizeof(T), count);
    if (count == 0) return;
    twin::PipeAccess(call, src.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, srcOffset.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    const uint64_t repeats = (bytes + twin::kRepeatBytes - 1) / twin::kRepeatBytes;
    twin::OnVector(repeats, count, repeats * (twin::kRepeatBytes / sizeof(T)));
    thread_local std::vector<uint8_t> data, shadow;  // gathered first: dst may overlap the sources
    data.resize(bytes);
    shadow.resize(bytes);
    const twin::CoreState &core = twin::Core();
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t offset = uint64_t(srcBaseAddr) + twin::GatherOffset(call, srcOffset, i);
        const uint64_t at = twin::GatherSource(call, src.ByteOffset(), offset, sizeof(T), sizeof(T), i);
        std::memcpy(data.data() + i * sizeof(T), core.ub.data() + at, sizeof(T));
        std::memcpy(shadow.data() + i * sizeof(T), core.shadow.data() + at, sizeof(T));
    }
    twin::CoreState &out = twin::Core();
    std::memcpy(out.ub.data() + dst.ByteOffset(), data.data(), bytes);
    std::memcpy(out.shadow.data() + dst.ByteOffset(), shadow.data(), bytes);
}

template <typename T>
void Gatherb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &offset,
             const uint8_t repeatTime, const GatherRepeatParams &repeatParams)
{
    static_assert(twin::kIsOneOf<T, uint16_t, uint32_t>, "Gatherb on A2 takes uint16_t or uint32_t");
    const char *call = "Gatherb";
    const uint32_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    const uint64_t rep = repeatParams.dstRepStride;
    const uint64_t last = repeatTime == 0 ? 0 : (repeatTime - 1) * rep + 7ull * blk + 1;
    twin::CheckGatherOperands(call, dst, src, offset, last * twin::kUbBlockBytes, uint64_t(repeatTime) * 8);
    if (repeatTime == 0) return;
    twin::PipeAccess(call, src.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, offset.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    twin::OnVector(repeatTime, uint64_t(repeatTime) * (twin::kRepeatBytes / sizeof(T)));
    for (uint32_t r = 0; r < repeatTime; ++r) {
        for (uint32_t b = 0; b < 8; ++b) {
            const uint32_t i = r * 8 + b;
            const uint64_t at = twin::GatherSource(call, src.ByteOffset(), twin::GatherOffset(call, offset, i),
                                                   twin::kUbBlockBytes, twin::kUbBlockBytes, i);
            const uint64_t to = dst.ByteOffset() + (r * rep + uint64_t(b) * blk) * twin::kUbBlockBytes;
            twin::MoveUb(static_cast<uint32_t>(to), at, twin::kUbBlockBytes);
        }
    }
}

}  // namespace AscendC

namespace twin {

// Bit i of a built-in gather-mask pattern (1: even elements, 2: odd, 3-6: the first..fourth of
// every four, 7: all).
inline bool PatternBit(uint8_t pattern, uint64_t i)
{
    if (pattern <= 2) return i % 2 == uint64_t(pattern - 1);
    if (pattern <= 6) return i % 4 == uint64_t(pattern - 3);
    return true;
}

// GatherMask over src0 with the selection bit of (repeat r, element i) given by bit(r, i).
template <typename T, typename Bit>
void GatherSelected(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src0,
                    bool reduce_mode, uint32_t mask, const AscendC::GatherMaskParams &gp, uint64_t &rsvdCnt, Bit &&bit)
{
    static_assert(kIsOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "GatherMask on A2 takes 16- and 32-bit types");
    dst.Check(call);
    src0.Check(call);
    TWIN_CHECK(dst.ByteOffset() % kUbBlockBytes == 0, call, "dst must start 32-byte aligned in UB (byte offset ",
               dst.ByteOffset(), ")");
    TWIN_CHECK(src0.ByteOffset() % kUbBlockBytes == 0, call, "src0 must start 32-byte aligned in UB (byte offset ",
               src0.ByteOffset(), ")");
    TWIN_CHECK(!reduce_mode || mask >= 1, call, "in Counter mode (reduceMode true) mask must be in [1, 2^32 - 1]");
    const uint64_t per_repeat = reduce_mode ? mask : kRepeatBytes / sizeof(T), per_block = kUbBlockBytes / sizeof(T);
    CoreState &core = Core();
    thread_local std::vector<uint8_t> data, shadow;
    data.clear();
    shadow.clear();
    for (uint32_t r = 0; r < gp.repeatTimes; ++r) {
        for (uint64_t i = 0; i < per_repeat; ++i) {
            if (!bit(r, i)) continue;
            const uint64_t at = src0.ByteOffset() + (uint64_t(r) * gp.src0RepeatStride +
                                                     i / per_block * gp.src0BlockStride) * kUbBlockBytes +
                                i % per_block * sizeof(T);
            TWIN_CHECK(at + sizeof(T) <= src0.ByteOffset() + src0.BytesToBufferEnd(), call, "src0 element ", i,
                       " of repeat ", r, " lies past the end of its buffer");
            data.insert(data.end(), core.ub.data() + at, core.ub.data() + at + sizeof(T));
            shadow.insert(shadow.end(), core.shadow.data() + at, core.shadow.data() + at + sizeof(T));
        }
    }
    TWIN_CHECK(data.size() <= dst.BytesToBufferEnd(), call, "dst must hold the ", data.size() / sizeof(T),
               " gathered elements inside its buffer (the buffer has ", dst.BytesToBufferEnd() / sizeof(T), ")");
    PipeAccess(call, src0.Slot(), Pipe::V, false);
    PipeAccess(call, dst.Slot(), Pipe::V, true);
    OnVector(gp.repeatTimes, data.size() / sizeof(T), uint64_t(gp.repeatTimes) * (kRepeatBytes / sizeof(T)));
    std::memcpy(core.ub.data() + dst.ByteOffset(), data.data(), data.size());
    std::memcpy(core.shadow.data() + dst.ByteOffset(), shadow.data(), shadow.size());
    rsvdCnt = data.size() / sizeof(T);
    core.mask_count_mode = false;
}

}  // namespace twin

namespace AscendC {

template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const uint8_t src1Pattern, const bool reduceMode,
                const uint32_t mask, const GatherMaskParams &gatherMaskParams, uint64_t &rsvdCnt)
{
    TWIN_CHECK(src1Pattern >= 1 && src1Pattern <= 7, "GatherMask", "a built-in src1Pattern must be in [1, 7] (got ",
               int(src1Pattern), ")");
    twin::GatherSelected("GatherMask", dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
                         [&](uint32_t, uint64_t i) { return twin::PatternBit(src1Pattern, i); });
}

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<U> &src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams, uint64_t &rsvdCnt)
{
    static_assert(sizeof(U) == sizeof(T) && std::is_unsigned_v<U>,
                  "a GatherMask pattern tensor holds uint16_t for 16-bit and uint32_t for 32-bit data");
    src1Pattern.Check("GatherMask");
    TWIN_CHECK(src1Pattern.ByteOffset() % twin::kUbBlockBytes == 0, "GatherMask",
               "src1Pattern must start 32-byte aligned in UB (byte offset ", src1Pattern.ByteOffset(), ")");
    twin::PipeAccess("GatherMask", src1Pattern.Slot(), twin::Pipe::V, false);
    const twin::CoreState &core = twin::Core();
    const uint32_t bits = sizeof(U) * 8;
    twin::GatherSelected("GatherMask", dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt, [&](uint32_t r, uint64_t i) {
        const uint64_t at = src1Pattern.ByteOffset() + uint64_t(r) * gatherMaskParams.src1RepeatStride * twin::kUbBlockBytes +
                            i / bits * sizeof(U);
        TWIN_CHECK(at + sizeof(U) <= src1Pattern.ByteOffset() + src1Pattern.BytesToBufferEnd(), "GatherMask",
                   "the bits of repeat ", r, " run past the end of src1Pattern's buffer");
        TWIN_CHECK(core.AllDefined(static_cast<uint32_t>(at), sizeof(U)), "GatherMask",
                   "src1Pattern bits were never written (UB byte offset ", at, ")");
        U word;
        std::memcpy(&word, core.ub.data() + at, sizeof(U));
        return bool((word >> (i % bits)) & 1u);
    });
}

}  // namespace AscendC
