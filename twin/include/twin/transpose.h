// SPDX-License-Identifier: BSD-3-Clause
// Transpose (the 16 x 16 form and the [N,C,H,W] <-> [N,H,W,C] form with TransposeParamsExt) and
// TransDataTo5HD (the address-list forms), on the vector pipe. One TransDataTo5HD repeat reads 16
// DataBlocks (srcList, each moved on by srcRepStride blocks per repeat) and writes 16 (dstList
// likewise): destination block k holds element k of every source block, in list order, which is a
// 16 x 16 transpose for 16-bit elements. The twin models the 16-bit types only (int16_t, uint16_t,
// half); the 8- and 32-bit layouts (dstHighHalf / srcHighHalf, pairs of blocks) are refused at build.
// Rules: 32-byte aligned UB operands inside their tensors, defined source bytes, the documented
// parameter ranges, sharedTmpBuffer's documented size; the address form names no tensor, so only the
// addresses themselves are checked there (inside UB, aligned), not pipe order.
// Cost: a TransDataTo5HD repeat or a 16 x 16 Transpose is charged one vector repeat; the
// TransposeParamsExt form two repeats per 512 bytes moved, in and out of sharedTmpBuffer, as CANN's
// A2 implementation stages it (an assumption: no public per-instruction figure).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "data_copy.h"
#include "vector.h"

namespace AscendC {

inline constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,  // [16, 16] -> [16, 16]^T
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
};

struct TransDataTo5HDParams {
    constexpr TransDataTo5HDParams() = default;
    constexpr TransDataTo5HDParams(bool dstHighHalfIn, bool srcHighHalfIn, uint8_t repeatTimesIn, uint16_t dstRepStrideIn,
                                   uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn)
    {
    }
    bool dstHighHalf = false;  // 8-bit types only
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;  // DataBlocks between a block's places in consecutive repeats
    uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
    constexpr TransposeParamsExt() = default;
    constexpr TransposeParamsExt(uint16_t nSizeIn, uint16_t cSizeIn, uint16_t hSizeIn, uint16_t wSizeIn,
                                 TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn)
    {
    }
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace twin {

inline constexpr uint32_t kTransBlocks = 16;

// The 16-bit TransDataTo5HD on UB byte addresses; every address was checked by the caller.
inline void TransposeRepeats(const uint64_t dst[], const uint64_t src[], const AscendC::TransDataTo5HDParams &p)
{
    CoreState &core = Core();
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        uint8_t data[kTransBlocks][kUbBlockBytes], seen[kTransBlocks][kUbBlockBytes];
        for (uint32_t m = 0; m < kTransBlocks; ++m) {  // the whole repeat is read before it is written
            const uint64_t at = src[m] + uint64_t(r) * p.srcRepStride * kUbBlockBytes;
            std::memcpy(data[m], core.ub.data() + at, kUbBlockBytes);
            std::memcpy(seen[m], core.shadow.data() + at, kUbBlockBytes);
        }
        for (uint32_t k = 0; k < kTransBlocks; ++k) {
            const uint64_t at = dst[k] + uint64_t(r) * p.dstRepStride * kUbBlockBytes;
            for (uint32_t m = 0; m < kTransBlocks; ++m) {
                std::memcpy(core.ub.data() + at + 2 * m, data[m] + 2 * k, 2);
                std::memcpy(core.shadow.data() + at + 2 * m, seen[m] + 2 * k, 2);
            }
        }
    }
    OnVector(p.repeatTimes, uint64_t(p.repeatTimes) * kTransBlocks * kTransBlocks,
             uint64_t(p.repeatTimes) * kTransBlocks * kTransBlocks);
}

// Each of the 16 blocks a list names, over every repeat: aligned, inside UB, and (sources) defined.
inline void CheckTransList(const char *call, const uint64_t list[], uint32_t repeats, uint16_t stride, bool source)
{
    const char *role = source ? "srcList" : "dstList";
    const uint64_t ub = Core().ub.size();
    for (uint32_t i = 0; i < kTransBlocks; ++i) {
        TWIN_CHECK(list[i] % kUbBlockBytes == 0, call, role, "[", i, "] must be a 32-byte aligned UB address (got ",
                   list[i], ")");
        const uint64_t last = list[i] + (uint64_t(repeats) - 1) * stride * kUbBlockBytes + kUbBlockBytes;
        TWIN_CHECK(last <= ub, call, role, "[", i, "] runs past the end of UB over ", repeats, " repeats (to byte ",
                   last, " of ", ub, ")");
        for (uint32_t r = 0; source && r < repeats; ++r) {
            TWIN_CHECK(Core().AllDefined(uint32_t(list[i] + uint64_t(r) * stride * kUbBlockBytes), kUbBlockBytes), call,
                       "srcList[", i, "] reads UB bytes that nothing wrote (repeat ", r, ")");
        }
    }
}

template <typename T>
void TransDataTo5HDAt(const char *call, const uint64_t dst[], const uint64_t src[], const AscendC::TransDataTo5HDParams &p)
{
    static_assert(sizeof(T) == 2, "the twin models TransDataTo5HD for 16-bit types (int16_t, uint16_t, half) only");
    if (p.repeatTimes == 0) {
        return;  // documented: no conversion, nothing written
    }
    CheckTransList(call, src, p.repeatTimes, p.srcRepStride, true);
    CheckTransList(call, dst, p.repeatTimes, p.dstRepStride, false);
    TransposeRepeats(dst, src, p);
}

}  // namespace twin

namespace AscendC {

template <typename T>
void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                    const TransDataTo5HDParams &nchwconvParams)
{
    twin::TransDataTo5HDAt<T>("TransDataTo5HD", dstList, srcList, nchwconvParams);
}

template <typename T>
void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                    const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE], const TransDataTo5HDParams &nchwconvParams)
{
    const char *call = "TransDataTo5HD";
    uint64_t dst[NCHW_CONV_ADDR_LIST_SIZE], src[NCHW_CONV_ADDR_LIST_SIZE];
    const uint64_t span = (uint64_t(nchwconvParams.repeatTimes) - 1) * nchwconvParams.srcRepStride * 32 + 32;
    for (int32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; ++i) {
        twin::CheckUbOperand(call, srcList[i], nchwconvParams.repeatTimes ? span : 0, "source");
        twin::PipeAccess(call, srcList[i].Slot(), twin::Pipe::V, false);
        src[i] = srcList[i].ByteOffset();
    }
    const uint64_t dspan = (uint64_t(nchwconvParams.repeatTimes) - 1) * nchwconvParams.dstRepStride * 32 + 32;
    for (int32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; ++i) {
        twin::CheckUbOperand(call, dstList[i], nchwconvParams.repeatTimes ? dspan : 0, "destination");
        twin::PipeAccess(call, dstList[i].Slot(), twin::Pipe::V, true);
        dst[i] = dstList[i].ByteOffset();
    }
    twin::TransDataTo5HDAt<T>(call, dst, src, nchwconvParams);
}

// The 16 x 16 transpose of 16-bit elements: dst[j][i] = src[i][j].
template <typename T>
void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src)
{
    const char *call = "Transpose";
    static_assert(twin::kIsOneOf<T, int16_t, uint16_t, half>, "Transpose [16, 16] supports int16_t, uint16_t and half");
    twin::CheckUbOperand(call, src, 512, "source");
    twin::CheckUbOperand(call, dst, 512, "destination");
    twin::PipeAccess(call, src.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    uint64_t d[twin::kTransBlocks], s[twin::kTransBlocks];
    for (uint32_t i = 0; i < twin::kTransBlocks; ++i) {
        d[i] = dst.ByteOffset() + i * twin::kUbBlockBytes;
        s[i] = src.ByteOffset() + i * twin::kUbBlockBytes;
    }
    twin::CheckTransList(call, s, 1, 0, true);
    twin::TransposeRepeats(d, s, TransDataTo5HDParams(false, false, 1, 0, 0));
}

// [N,C,H,W] <-> [N,H,W,C] through sharedTmpBuffer, whose contents are unspecified afterwards (poisoned
// here); TRANSPOSE_ND2ND_B16 is the 16 x 16 form, TRANSPOSE_TYPE_NONE does nothing.
template <typename T>
void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer,
               const TransposeParamsExt &transposeParams)
{
    const char *call = "Transpose";
    static_assert(twin::kIsOneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>,
                  "Transpose with TransposeParamsExt supports int8_t, uint8_t, int16_t, uint16_t, half, int32_t, "
                  "uint32_t and float");
    const TransposeParamsExt &p = transposeParams;
    const bool to_hwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    if (p.transposeType == TransposeType::TRANSPOSE_TYPE_NONE) {
        return;
    }
    if (p.transposeType == TransposeType::TRANSPOSE_ND2ND_B16) {
        if constexpr (sizeof(T) == 2) {
            Transpose(dst, src);
        } else {
            TWIN_CHECK(false, call, "TRANSPOSE_ND2ND_B16 needs a 16-bit type (int16_t, uint16_t or half)");
        }
        return;
    }
    TWIN_CHECK(to_hwc || p.transposeType == TransposeType::TRANSPOSE_NHWC2NCHW, call, "A2 supports TRANSPOSE_ND2ND_B16, "
               "TRANSPOSE_NCHW2NHWC and TRANSPOSE_NHWC2NCHW (got TransposeType ", int(p.transposeType), ")");
    const uint64_t image = uint64_t(p.hSize) * p.wSize, total = uint64_t(p.nSize) * p.cSize * image;
    TWIN_CHECK(p.cSize <= 4095, call, "cSize must be in [0, 4095] (got ", p.cSize, ")");
    TWIN_CHECK(image <= 4095, call, "hSize x wSize must be in [0, 4095] (got ", image, ")");
    TWIN_CHECK(image * sizeof(T) % twin::kUbBlockBytes == 0, call, "hSize x wSize x sizeof(T) must be a multiple of "
               "32 bytes (", image, " elements of ", sizeof(T), " bytes)");
    const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = twin::kUbBlockBytes / sizeof(T);
    const uint64_t need = (to_hwc ? p.cSize + 2u : 2u * p.cSize + 1u) * h0 * w0 * sizeof(T);
    TWIN_CHECK(sharedTmpBuffer.GetSize() >= need, call, "sharedTmpBuffer must hold ", need, " bytes for this "
               "transposeType and cSize (", to_hwc ? "(cSize + 2)" : "(2 x cSize + 1)", " x h0 x w0 x sizeof(T)); it "
               "holds ", sharedTmpBuffer.GetSize());
    const uint64_t bytes = total * sizeof(T);
    twin::CheckUbOperand(call, src, bytes, "source");
    twin::CheckUbOperand(call, dst, bytes, "destination");
    twin::CheckUbOperand(call, sharedTmpBuffer, need, "sharedTmpBuffer");
    twin::CoreState &core = twin::Core();
    TWIN_CHECK(core.AllDefined(src.ByteOffset(), uint32_t(bytes)), call, "the source holds UB bytes that nothing wrote");
    twin::PipeAccess(call, src.Slot(), twin::Pipe::V, false);
    twin::PipeAccess(call, sharedTmpBuffer.Slot(), twin::Pipe::V, true);
    twin::PipeAccess(call, dst.Slot(), twin::Pipe::V, true);
    std::vector<uint8_t> out(bytes);
    const uint8_t *in = core.ub.data() + src.ByteOffset();
    for (uint64_t n = 0; n < p.nSize; ++n) {
        for (uint64_t c = 0; c < p.cSize; ++c) {
            for (uint64_t i = 0; i < image; ++i) {
                const uint64_t chw = (n * p.cSize + c) * image + i, hwc = (n * image + i) * p.cSize + c;
                std::memcpy(out.data() + (to_hwc ? hwc : chw) * sizeof(T), in + (to_hwc ? chw : hwc) * sizeof(T),
                            sizeof(T));
            }
        }
    }
    std::memcpy(core.ub.data() + dst.ByteOffset(), out.data(), bytes);
    core.MarkDefined(dst.ByteOffset(), uint32_t(bytes));
    core.MarkUndefined(sharedTmpBuffer.ByteOffset(), uint32_t(need));
    const uint64_t repeats = 2 * ((bytes + 511) / 512);
    twin::OnVector(repeats, total, total);
}

}  // namespace AscendC
