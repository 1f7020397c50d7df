// SPDX-License-Identifier: BSD-3-Clause
// Data movement between GM and the Unified Buffer: DataCopy (count and DataCopyParams forms),
// DataCopyPad (both directions), with the atomic modes of atomic.h applied to copies to GM.
// Rules guarded here: UB operands start 32-byte aligned and stay inside their tensor; DataCopy moves
// whole 32-byte blocks (the NPU silently drops the rest, the twin refuses); documented parameter
// ranges; GM accesses stay inside the kernel's buffers. UB bytes that nothing wrote reach GM as the poison the
// UB holds and are recorded undefined there (launch_abi.h TwinGmArg::undefined).
// DataCopyPad fills padding and dummy elements as the documentation says, and poisons them where it
// says their values are random. Copy-in runs on pipe MTE2, copy-out on MTE3, UB -> UB on V.
#pragma once
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>

#include "atomic.h"
#include "launch.h"
#include "memory.h"
#include "sync.h"
#include "types.h"

namespace AscendC {

// Lengths and strides in 32-byte blocks; a stride is the gap between one block's end and the next's start.
struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t src, uint16_t dst)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst)
    {
    }
};

// DataCopyPad: blockLen in bytes; GM strides in bytes, UB strides in 32-byte blocks.
struct DataCopyExtParams {
    uint16_t blockCount = 0;  // the documented default: a kernel must set it
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    // Five arguments, the last (reserved) one too: the real struct gives it no default.
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t src, uint32_t dst, uint32_t r)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst), rsv(r)
    {
    }
};

// Padding around each block copied in by DataCopyPad, in elements (each side at most 32 bytes).
template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue{};
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value)
    {
    }
};

// The older DataCopyPad parameters (used with DataCopyParams, blockLen in bytes).
struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool pad, uint8_t left, uint8_t right, uint64_t value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value)
    {
    }
};

}  // namespace AscendC

namespace twin {

inline constexpr uint32_t kMaxBlockCount = 4095;

inline uint64_t RoundUp32(uint64_t n) { return (n + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes; }

// n blocks of `len` bytes, `src_pitch` / `dst_pitch` bytes apart (start to start).
struct Blocks {
    uint32_t count;
    uint64_t len;
    uint64_t src_pitch;
    uint64_t dst_pitch;
    uint64_t Span(uint64_t pitch, uint64_t last_len) const { return count ? (count - 1) * pitch + last_len : 0; }
};

// A UB operand: allocated, 32-byte aligned, and the `span` bytes the copy touches inside the tensor.
template <typename T>
void CheckUbOperand(const char *call, const AscendC::LocalTensor<T> &t, uint64_t span, const char *role)
{
    t.Check(call);
    TWIN_CHECK(t.ByteOffset() % kUbBlockBytes == 0, call, "the UB ", role,
               " must start 32-byte aligned (UB byte offset ", t.ByteOffset(), ")");
    const uint64_t limit = std::min<uint64_t>(RoundUp32(uint64_t(t.GetSize()) * sizeof(T)), t.BytesToBufferEnd());
    TWIN_CHECK(span <= limit, call, "the copy must stay inside the UB ", role, " tensor (", span, " bytes > ", limit,
               " bytes)");
}

// GM -> UB on MTE2: the destination bytes become defined. `l2` false: the GM tensor's L2 hint is
// CACHE_MODE_DISABLE, so the timeline reads every byte from HBM and leaves no trace in its L2 model.
template <typename T>
void CopyIn(const char *call, const AscendC::LocalTensor<T> &dst, const uint8_t *gm, const Blocks &b, bool l2 = true)
{
    if (b.count == 0 || b.len == 0) {
        return;  // nothing moves, as on the NPU
    }
    CoreState &core = Core();
    CheckGm(call, gm, b.Span(b.src_pitch, b.len));
    TouchGm(call, gm, b.count, b.len, b.src_pitch, GmAccess::kRead, Pipe::MTE2);
    const uint32_t base = dst.ByteOffset();
    PipeAccess(call, dst.Slot(), Pipe::MTE2, true, base, base + b.Span(b.dst_pitch, b.len));
    for (uint32_t i = 0; i < b.count; ++i) {
        std::memcpy(core.ub.data() + base + i * b.dst_pitch, gm + i * b.src_pitch, b.len);
        core.MarkDefined(uint32_t(base + i * b.dst_pitch), uint32_t(b.len));
    }
    OnCopyIn(uint64_t(b.count) * b.len, l2 ? gm : nullptr, b.count, b.src_pitch);
}

// The NPU leaves the order of atomic adds from different cores open: the launch seed shuffles it by
// letting each core yield a pseudo-random number of times before it takes the lock.
inline void AtomicJitter(const CoreState &core)
{
    uint64_t h = Launch().seed ^ (uint64_t(core.block_idx) << 40) ^ core.counters.copy_out_instrs;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64 finaliser
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    for (uint64_t k = (h ^ (h >> 31)) % 8; k > 0; --k) {
        std::this_thread::yield();
    }
}

// UB -> GM on MTE3; with SetAtomicAdd on, each element is added into GM under the launch's lock.
// `l2` as for CopyIn.
template <typename T>
void CopyOut(const char *call, uint8_t *gm, const AscendC::LocalTensor<T> &src, const Blocks &b, bool l2 = true)
{
    if (b.count == 0 || b.len == 0) {
        return;
    }
    CoreState &core = Core();
    const uint32_t base = src.ByteOffset();
    CheckGm(call, gm, b.Span(b.dst_pitch, b.len));
    TouchGm(call, gm, b.count, b.len, b.dst_pitch, core.atomic_dtype == 0 ? GmAccess::kWrite : AtomicKind(core.atomic_op),
            Pipe::MTE3);
    PipeAccess(call, src.Slot(), Pipe::MTE3, false, base, base + b.Span(b.src_pitch, b.len));
    // UB bytes nothing wrote go out as the UB holds them (poison) and are recorded undefined in GM;
    // the caller's harness decides whether an output may keep them.
    MarkGmWritten(gm, b.count, b.len, b.dst_pitch, core.shadow.data() + base, b.src_pitch, core.atomic_dtype != 0);
    if (core.atomic_dtype == 0) {
        for (uint32_t i = 0; i < b.count; ++i) {
            std::memcpy(gm + i * b.dst_pitch, core.ub.data() + base + i * b.src_pitch, b.len);
        }
        core.gm_log.Wrote(gm, b.count, b.len, b.dst_pitch, core.ub.data() + base, b.src_pitch);
    } else {
        const char *mode = AtomicCall(core.atomic_op);
        TWIN_CHECK(core.atomic_dtype == AtomicCode<T>(), call, "with ", mode, " on, the copied type must be the ", mode,
                   " type (copies ", AtomicName(AtomicCode<T>()), ", ", mode, "<", AtomicName(core.atomic_dtype), ">)");
        const AtomicOp op = AtomicOp(core.atomic_op);
        AtomicJitter(core);
        std::lock_guard<std::mutex> lock(Launch().atomic_mutex);
        for (uint32_t i = 0; i < b.count; ++i) {
            uint8_t *out = gm + i * b.dst_pitch;
            const uint8_t *in = core.ub.data() + base + i * b.src_pitch;
            for (uint64_t k = 0; k < b.len; k += sizeof(T)) {
                T acc, add;
                std::memcpy(&acc, out + k, sizeof(T));
                std::memcpy(&add, in + k, sizeof(T));
                if (op != AtomicOp::kAdd) {  // integers compare exactly, 16-bit floats through float
                    using Cmp = std::conditional_t<std::is_integral_v<T>, T, float>;
                    const bool larger = Cmp(add) > Cmp(acc), smaller = Cmp(add) < Cmp(acc);
                    acc = (op == AtomicOp::kMax ? larger : smaller) ? add : acc;
                } else if constexpr (std::is_integral_v<T>) {
                    acc = T(std::make_unsigned_t<T>(acc) + std::make_unsigned_t<T>(add));  // wraps
                } else {
                    acc = T(float(acc) + float(add));
                }
                std::memcpy(out + k, &acc, sizeof(T));
            }
        }
    }
    OnCopyOut(uint64_t(b.count) * b.len, l2 ? gm : nullptr, b.count, b.dst_pitch);
}

// UB -> UB on the vector pipe: definedness travels with the bytes.
template <typename T>
void CopyUb(const char *call, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, const Blocks &b)
{
    CoreState &core = Core();
    PipeAccess(call, src.Slot(), Pipe::V, false, src.ByteOffset(), src.ByteOffset() + b.Span(b.src_pitch, b.len));
    PipeAccess(call, dst.Slot(), Pipe::V, true, dst.ByteOffset(), dst.ByteOffset() + b.Span(b.dst_pitch, b.len));
    for (uint32_t i = 0; i < b.count; ++i) {
        const uint64_t s = src.ByteOffset() + i * b.src_pitch, d = dst.ByteOffset() + i * b.dst_pitch;
        std::memmove(core.ub.data() + d, core.ub.data() + s, b.len);
        std::memmove(core.shadow.data() + d, core.shadow.data() + s, b.len);
    }
    const uint64_t repeats = (uint64_t(b.count) * b.len + kRepeatBytes - 1) / kRepeatBytes;
    OnVector(repeats, uint64_t(b.count) * b.len / sizeof(T), repeats * (kRepeatBytes / sizeof(T)));
}

inline void CheckCount(const char *call, uint64_t bytes, uint32_t count, size_t elem)
{
    TWIN_CHECK(bytes % kUbBlockBytes == 0, call, "count * sizeof(T) must be a multiple of 32 bytes (", count,
               " elements of ", elem, " bytes = ", bytes, " bytes; the NPU would silently copy only ",
               bytes / kUbBlockBytes * kUbBlockBytes, "; use DataCopyPad for unaligned lengths)");
}

// DataCopyParams: blockCount in [1, 4095], blockLen in [1, 65535] blocks of 32 bytes.
inline Blocks ParamBlocks(const char *call, const AscendC::DataCopyParams &p)
{
    TWIN_CHECK(p.blockCount >= 1 && p.blockCount <= kMaxBlockCount, call, "blockCount must be in [1, 4095] (got ",
               p.blockCount, "; stricter than CANN, which lets 0 pass as a no-op with a warning)");
    TWIN_CHECK(p.blockLen >= 1, call, "blockLen must be in [1, 65535] blocks of 32 bytes (got 0)");
    const uint64_t len = uint64_t(p.blockLen) * kUbBlockBytes;
    return Blocks{p.blockCount, len, len + uint64_t(p.srcStride) * kUbBlockBytes,
                  len + uint64_t(p.dstStride) * kUbBlockBytes};
}

inline constexpr uint64_t kMaxPadBlockLen = 2097151;  // DataCopyPad: bytes per block (21 bits)

inline void CheckPadBlocks(const char *call, uint32_t blockCount, uint64_t blockLen, size_t elem)
{
    TWIN_CHECK(blockCount >= 1 && blockCount <= kMaxBlockCount, call, "blockCount must be in [1, 4095] (got ",
               blockCount, "; stricter than CANN, which lets 0 pass as a no-op with a warning)");
    TWIN_CHECK(blockLen <= kMaxPadBlockLen, call, "blockLen must be in [0, ", kMaxPadBlockLen, "] bytes (got ",
               blockLen, ")");
    TWIN_CHECK(blockLen % elem == 0, call, "blockLen must be a whole number of elements (", blockLen, " bytes, ",
               elem, "-byte elements)");
}

// Fills [off, off + n) of UB with `value`, or poisons it: what the documentation calls random values.
template <typename T>
void FillOrPoison(CoreState &core, uint64_t off, uint64_t n, bool fill, const T &value)
{
    if (n == 0) {
        return;
    }
    if (!fill) {
        core.MarkUndefined(uint32_t(off), uint32_t(n));
        return;
    }
    for (uint64_t k = 0; k < n; k += sizeof(T)) {
        std::memcpy(core.ub.data() + off + k, &value, sizeof(T));
    }
    core.MarkDefined(uint32_t(off), uint32_t(n));
}

// DataCopyPad GM -> UB. Each block lands 32-byte aligned as [left padding][data][right padding][dummy
// up to the next 32 bytes]. Per the documentation: with no padding the dummy repeats the block's
// first element (whatever isPad says); with padding, isPad fills padding and dummy with
// paddingValue, otherwise they are random (poison here).
template <typename T>
void PadCopyIn(const char *call, const AscendC::LocalTensor<T> &dst, const uint8_t *gm, uint32_t blockCount,
               uint64_t blockLen, uint64_t srcStride, uint64_t dstStride, bool isPad, uint32_t left, uint32_t right,
               const T &padValue, bool l2)
{
    CheckPadBlocks(call, blockCount, blockLen, sizeof(T));
    TWIN_CHECK(left * sizeof(T) <= kUbBlockBytes && right * sizeof(T) <= kUbBlockBytes, call,
               "leftPadding and rightPadding must each be at most 32 bytes (", left, " and ", right, " elements of ",
               sizeof(T), " bytes)");
    if (blockLen == 0) {
        return;
    }
    const uint64_t lb = left * sizeof(T), row = lb + blockLen + right * sizeof(T), row_ub = RoundUp32(row);
    const Blocks b{blockCount, blockLen, blockLen + srcStride, row_ub + dstStride * kUbBlockBytes};
    CheckUbOperand(call, dst, b.Span(b.dst_pitch, row_ub), "destination");
    const AscendC::LocalTensor<T> data = dst[uint32_t(lb / sizeof(T))];
    CopyIn(call, data, gm, b, l2);  // data first: the dummy below may repeat its first element
    CoreState &core = Core();
    for (uint32_t i = 0; i < blockCount; ++i) {
        const uint64_t start = dst.ByteOffset() + i * b.dst_pitch;
        if (left == 0 && right == 0) {
            T first;
            std::memcpy(&first, core.ub.data() + start, sizeof(T));
            FillOrPoison(core, start + row, row_ub - row, true, first);
        } else {
            // isPad false: the value SetPadValue set for this element size, else random.
            T value = padValue;
            const bool fill = isPad || core.pad_value_bytes == sizeof(T);
            if (!isPad && fill) std::memcpy(&value, &core.pad_value, sizeof(T));
            FillOrPoison(core, start, lb, fill, value);
            FillOrPoison(core, start + lb + blockLen, row_ub - lb - blockLen, fill, value);
        }
    }
}

}  // namespace twin

namespace AscendC {

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count)
{
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    twin::CheckCount("DataCopy", bytes, count, sizeof(T));
    twin::CheckUbOperand("DataCopy", dst, bytes, "destination");
    twin::CopyIn("DataCopy", dst, reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), {1, bytes, bytes, bytes},
                !src.BypassesL2());
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    twin::CheckCount("DataCopy", bytes, count, sizeof(T));
    twin::CheckUbOperand("DataCopy", src, bytes, "source");
    twin::CopyOut("DataCopy", reinterpret_cast<uint8_t *>(dst.GetPhyAddr()), src, {1, bytes, bytes, bytes},
                 !dst.BypassesL2());
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    twin::CheckCount("DataCopy", bytes, count, sizeof(T));
    twin::CheckUbOperand("DataCopy", src, bytes, "source");
    twin::CheckUbOperand("DataCopy", dst, bytes, "destination");
    twin::CopyUb("DataCopy", dst, src, {1, bytes, bytes, bytes});
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &params)
{
    const twin::Blocks b = twin::ParamBlocks("DataCopy", params);
    twin::CheckUbOperand("DataCopy", dst, b.Span(b.dst_pitch, b.len), "destination");
    twin::CopyIn("DataCopy", dst, reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), b, !src.BypassesL2());
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &params)
{
    const twin::Blocks b = twin::ParamBlocks("DataCopy", params);
    twin::CheckUbOperand("DataCopy", src, b.Span(b.src_pitch, b.len), "source");
    twin::CopyOut("DataCopy", reinterpret_cast<uint8_t *>(dst.GetPhyAddr()), src, b, !dst.BypassesL2());
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &params)
{
    const twin::Blocks b = twin::ParamBlocks("DataCopy", params);
    twin::CheckUbOperand("DataCopy", src, b.Span(b.src_pitch, b.len), "source");
    twin::CheckUbOperand("DataCopy", dst, b.Span(b.dst_pitch, b.len), "destination");
    twin::CopyUb("DataCopy", dst, src, b);
}

template <typename T>
void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &params,
                 const DataCopyPadExtParams<T> &padParams)
{
    twin::PadCopyIn("DataCopyPad", dst, reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), params.blockCount,
                    params.blockLen, params.srcStride, params.dstStride, padParams.isPad, padParams.leftPadding,
                    padParams.rightPadding, padParams.paddingValue, !src.BypassesL2());
}

template <typename T>
void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &params,
                 const DataCopyPadParams &padParams)
{
    twin::PadCopyIn("DataCopyPad", dst, reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), params.blockCount,
                    params.blockLen, params.srcStride, params.dstStride, padParams.isPad, padParams.leftPadding,
                    padParams.rightPadding, static_cast<T>(padParams.paddingValue), !src.BypassesL2());
}

// UB -> GM: exactly blockLen bytes per block; the UB blocks start 32-byte aligned, srcStride 32-byte
// blocks apart, the GM blocks dstStride bytes apart.
template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &params)
{
    twin::CheckPadBlocks("DataCopyPad", params.blockCount, params.blockLen, sizeof(T));
    if (params.blockLen == 0) {
        return;
    }
    const uint64_t len = params.blockLen;
    const twin::Blocks b{params.blockCount, len, twin::RoundUp32(len) + uint64_t(params.srcStride) * twin::kUbBlockBytes,
                         len + params.dstStride};
    twin::CheckUbOperand("DataCopyPad", src, b.Span(b.src_pitch, len), "source");
    twin::CopyOut("DataCopyPad", reinterpret_cast<uint8_t *>(dst.GetPhyAddr()), src, b, !dst.BypassesL2());
}

template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &params)
{
    DataCopyPad(dst, src, DataCopyExtParams(params.blockCount, params.blockLen, params.srcStride, params.dstStride, 0));
}


}  // namespace AscendC
