// SPDX-License-Identifier: BSD-3-Clause
// TBuf: one scratch buffer of the Unified Buffer, always allocated, no queue; Get and GetWithOffset
// hand out tensors inside it (32-byte aligned offsets).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tpipe.h"

namespace AscendC {

// A scratch buffer: always allocated, no queue; cross-pipe use needs SetFlag/WaitFlag (sync.h).
template <TPosition pos>
class TBuf : public twin::BufferOwner {
public:
    TBuf() = default;
    TBuf(const TBuf &) = delete;
    TBuf &operator=(const TBuf &) = delete;
    ~TBuf()
    {
        if (pipe_ != nullptr) {
            pipe_->Forget(this);
        }
    }

    template <typename T>
    LocalTensor<T> Get()
    {
        Require("TBuf::Get");
        return LocalTensor<T>(slot_.get(), slot_[0].offset, slot_[0].bytes / sizeof(T));
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t count)
    {
        Require("TBuf::Get");
        TWIN_CHECK(uint64_t(count) * sizeof(T) <= slot_[0].bytes, "TBuf::Get", "count must fit the buffer (",
                   count, " elements of ", sizeof(T), " bytes > ", slot_[0].bytes, " bytes)");
        return LocalTensor<T>(slot_.get(), slot_[0].offset, count);
    }
    // `count` elements starting `byteOffset` bytes into the buffer (32-byte aligned).
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t byteOffset)
    {
        Require("TBuf::GetWithOffset");
        TWIN_CHECK(byteOffset % twin::kUbBlockBytes == 0, "TBuf::GetWithOffset",
                   "the offset must be a multiple of 32 bytes (offset ", byteOffset, ")");
        TWIN_CHECK(uint64_t(byteOffset) + uint64_t(count) * sizeof(T) <= slot_[0].bytes, "TBuf::GetWithOffset",
                   "offset + count must fit the buffer (", byteOffset, " + ", count, " elements of ", sizeof(T),
                   " bytes > ", slot_[0].bytes, " bytes)");
        return LocalTensor<T>(slot_.get(), slot_[0].offset + byteOffset, count);
    }

    // ---- twin internals ----
    void AttachBuffers(std::unique_ptr<twin::BufferSlot[]> slots, uint32_t, TPipe *pipe)
    {
        TWIN_CHECK(slot_ == nullptr, "TPipe::InitBuffer", "the TBuf already has a buffer (TPipe::Reset before a new InitBuffer)");
        slot_ = std::move(slots);
        slot_[0].state = twin::BufferSlot::State::Allocated;
        pipe_ = pipe;
    }
    void CheckAllFreed() const override {}
    void ReleaseBuffers() override
    {
        slot_[0].state = twin::BufferSlot::State::Free;
        slot_[0].generation++;
        retired_.push_back(std::move(slot_));
        pipe_ = nullptr;
    }

private:
    void Require(const char *call) const
    {
        TWIN_CHECK(slot_ != nullptr, call, "the TBuf has no buffer (call TPipe::InitBuffer first)");
    }

    std::unique_ptr<twin::BufferSlot[]> slot_;
    std::vector<std::unique_ptr<twin::BufferSlot[]>> retired_;
    TPipe *pipe_ = nullptr;
};

}  // namespace AscendC
