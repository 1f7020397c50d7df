// SPDX-License-Identifier: BSD-3-Clause
// Memory: LocalTensor (a view of Unified Buffer bytes) and GlobalTensor (a view of GM).
// Rules guarded here: a LocalTensor is used only while its buffer is allocated (no use after
// FreeTensor), views stay inside their buffer, UB views start 32-byte aligned where the hardware
// needs it, GM accesses stay inside the buffers the launcher passed, GetValue reads only written UB.
// GetValue/SetValue run on the scalar pipe (PIPE_S), which runs beside V, MTE2 and MTE3 like any
// other pipe: their UB and GM accesses take part in the pipe-hazard checks of sync.h.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core.h"

namespace AscendC {

enum class TPosition : uint8_t { GM, VECIN, VECOUT, VECCALC, A1, A2, B1, B2, CO1, CO2, LCM, MAX };
using QuePosition = TPosition;

}  // namespace AscendC

namespace twin {

// A buffer carved out of UB by TPipe::InitBuffer. Queue buffers cycle Free -> Allocated -> (EnQue)
// Queued -> (DeQue) Allocated -> (FreeTensor) Free; each AllocTensor that hands the buffer out again
// bumps `generation`, so a LocalTensor of an earlier owner is recognised as stale. FreeTensor moves
// no data: until the next AllocTensor the NPU's UB still holds it, and a freed tensor may be read or
// written (CANN's rms_norm reads its rstd after freeing it); the pipe rules judge those accesses, as
// FreeTensor's flag orders only what came before it. TBuf buffers stay Allocated.
struct BufferSlot {
    enum class State : uint8_t { Free, Allocated, Queued };
    uint32_t offset = 0;  // byte offset in UB, 32-byte aligned
    uint32_t bytes = 0;
    State state = State::Free;
    uint32_t generation = 0;
    const char *owner = "TBuf";  // "TQue" or "TBuf": for messages

    // Pipe hazards (see PipeAccess), per 32-byte block of the buffer: the last pipe that wrote it and
    // the core's instruction sequence number at that moment, and per pipe its last read since (0:
    // none); sized on first use. queue_sync_seq is the last EnQue/DeQue of the buffer.
    struct BlockUse {
        Pipe last_writer = Pipe::S;
        uint64_t write_seq = 0;
        uint64_t read_seq[4] = {};  // indexed by Pipe
    };
    std::vector<BlockUse> uses;
    uint64_t queue_sync_seq = 0;
};

// Every instruction that touches a UB buffer calls this for each operand (write = true for its
// destination) before it runs, with the UB bytes [lo, hi) it touches (the whole buffer when not
// given): blocks of one buffer that an access does not touch are not ordered by it. Data written by one pipe and touched by another pipe needs an
// EnQue/DeQue of that buffer, a SetFlag/WaitFlag between the two pipes, or PipeBarrier<PIPE_ALL>
// in between, as on the NPU where the pipes run concurrently. Defined in sync.h.
void PipeAccess(const char *call, BufferSlot *slot, Pipe pipe, bool write, uint64_t lo = 0, uint64_t hi = 0);

// Every GM access (a copy's `blocks` blocks of `len` bytes, `pitch` bytes apart, or one scalar)
// calls this before it runs: it is logged for the order across cores (gm_order.h), and bytes that
// one pipe of this core wrote and another touches (or one reads and another overwrites) need the
// same ordering between the two pipes as UB data. Defined in sync.h.
void TouchGm(const char *call, const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, GmAccess kind, Pipe pipe);

}  // namespace twin

namespace AscendC {

template <typename T>
class LocalTensor {
public:
    using PrimType = T;

    LocalTensor() = default;
    LocalTensor(twin::BufferSlot *slot, uint32_t byte_offset, uint32_t elements)
        : slot_(slot), generation_(slot ? slot->generation : 0), byte_offset_(byte_offset), size_(elements)
    {
    }
    // A static tensor: tileSize elements at UB byte address addr (defined in local_alloc.h).
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize);

    // A view starting `offset` elements further on, to the end of this view.
    LocalTensor operator[](uint32_t offset) const
    {
        Check("LocalTensor::operator[]");
        TWIN_CHECK(offset < size_, "LocalTensor::operator[]", "offset must be below the tensor size (offset ",
                   offset, ", size ", size_, " elements)");
        LocalTensor view = *this;
        view.byte_offset_ += offset * sizeof(T);
        view.size_ -= offset;
        return view;
    }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const
    {
        Check("LocalTensor::ReinterpretCast");
        LocalTensor<U> out;
        out.slot_ = slot_;
        out.generation_ = generation_;
        out.byte_offset_ = byte_offset_;
        out.size_ = static_cast<uint32_t>(uint64_t(size_) * sizeof(T) / sizeof(U));
        return out;
    }

    T GetValue(uint32_t index) const
    {
        Check("LocalTensor::GetValue");
        TWIN_CHECK(index < size_, "LocalTensor::GetValue", "index must be below the tensor size (index ", index,
                   ", size ", size_, ")");
        uint32_t off = byte_offset_ + index * sizeof(T);
        TWIN_CHECK(twin::Core().AllDefined(off, sizeof(T)), "LocalTensor::GetValue",
                   "reads UB that nothing wrote (UB byte offset ", off, ")");
        twin::PipeAccess("LocalTensor::GetValue", slot_, twin::Pipe::S, false, off, off + sizeof(T));  // the scalar unit reads UB
        T value;
        std::memcpy(&value, twin::Core().ub.data() + off, sizeof(T));
        return value;
    }

    void SetValue(uint32_t index, T value) const
    {
        Check("LocalTensor::SetValue");
        TWIN_CHECK(index < size_, "LocalTensor::SetValue", "index must be below the tensor size (index ", index,
                   ", size ", size_, ")");
        uint32_t off = byte_offset_ + index * sizeof(T);
        twin::PipeAccess("LocalTensor::SetValue", slot_, twin::Pipe::S, true, off, off + sizeof(T));  // the scalar unit writes UB
        std::memcpy(twin::Core().ub.data() + off, &value, sizeof(T));
        twin::Core().MarkDefined(off, sizeof(T));
    }

    uint32_t GetSize() const { return size_; }
    void SetSize(uint32_t elements)
    {
        TWIN_CHECK(uint64_t(elements) * sizeof(T) <= uint64_t(size_) * sizeof(T) + SlotTail(), "LocalTensor::SetSize",
                   "the size must fit the buffer (", elements, " elements)");
        size_ = elements;
    }
    uint64_t GetPhyAddr() const { return byte_offset_; }

    // ---- twin internals (not Ascend C API) ----
    // Throws unless the buffer behind this tensor is still allocated to it.
    void Check(const char *call) const
    {
        TWIN_CHECK(slot_ != nullptr, call, "the LocalTensor was never allocated (AllocTensor / TBuf::Get)");
        TWIN_CHECK(slot_->generation == generation_, call,
                   "the LocalTensor is used after FreeTensor returned its buffer and a later AllocTensor (or the "
                   "TPipe's end) handed it out again: its bytes belong to another tensor");
    }
    uint32_t ByteOffset() const { return byte_offset_; }
    T *Data() const { return reinterpret_cast<T *>(twin::Core().ub.data() + byte_offset_); }
    uint8_t *Shadow() const { return twin::Core().shadow.data() + byte_offset_; }
    twin::BufferSlot *Slot() const { return slot_; }
    // Bytes of this view's buffer from the view's start to the buffer's end.
    uint32_t BytesToBufferEnd() const { return slot_->offset + slot_->bytes - byte_offset_; }

private:
    template <typename U>
    friend class LocalTensor;
    uint32_t SlotTail() const { return slot_ ? BytesToBufferEnd() - size_ * sizeof(T) : 0; }

    twin::BufferSlot *slot_ = nullptr;
    uint32_t generation_ = 0;
    uint32_t byte_offset_ = 0;
    uint32_t size_ = 0;
};

}  // namespace AscendC

namespace twin {

struct LaunchState;
// Throws unless GM bytes [p, p + bytes) lie inside one buffer the launcher passed (see launch.h).
void CheckGm(const char *call, const void *p, uint64_t bytes);
// Records which of the GM bytes just written hold undefined data. Defined in launch.h.
void MarkGmWritten(uint8_t *gm, uint32_t count, uint64_t len, uint64_t pitch, const uint8_t *shadow,
                   uint64_t src_pitch, bool merge);

}  // namespace twin

namespace AscendC {

// How GM traffic through a GlobalTensor should use L2. A hint only: the values moved never change.
// On A2/A3 a build with L2_CACHE_HINT maps CACHE_MODE_DISABLE to an address alias that bypasses L2
// and leaves every other mode as NORMAL; the timeline models that build (see DataCopy).
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    void SetGlobalBuffer(T *buffer, uint64_t elements)
    {
        ptr_ = buffer;
        size_ = elements;
    }
    void SetGlobalBuffer(T *buffer) { SetGlobalBuffer(buffer, UINT64_MAX / sizeof(T)); }

    GlobalTensor operator[](uint64_t offset) const
    {
        GlobalTensor view = *this;
        view.ptr_ = ptr_ + offset;
        view.size_ = offset <= size_ ? size_ - offset : 0;
        return view;
    }

    T GetValue(uint64_t index) const
    {
        twin::CheckGm("GlobalTensor::GetValue", ptr_ + index, sizeof(T));
        twin::TouchGm("GlobalTensor::GetValue", ptr_ + index, 1, sizeof(T), sizeof(T), twin::GmAccess::kRead, twin::Pipe::S);
        twin::Core().counters.gm_scalar_reads++;
        twin::OnScalarGm();
        T value;
        std::memcpy(&value, ptr_ + index, sizeof(T));
        return value;
    }
    // Not const, unlike LocalTensor::SetValue: a kernel cannot write GM through a const GlobalTensor.
    void SetValue(uint64_t index, T value)
    {
        twin::CheckGm("GlobalTensor::SetValue", ptr_ + index, sizeof(T));
        twin::TouchGm("GlobalTensor::SetValue", ptr_ + index, 1, sizeof(T), sizeof(T), twin::GmAccess::kWrite, twin::Pipe::S);
        twin::Core().counters.gm_scalar_writes++;
        twin::OnScalarGm();
        std::memcpy(ptr_ + index, &value, sizeof(T));
        twin::Core().gm_log.Wrote(ptr_ + index, 1, sizeof(T), sizeof(T), &value, sizeof(T));
        twin::MarkGmWritten(reinterpret_cast<uint8_t *>(ptr_ + index), 1, sizeof(T), sizeof(T), nullptr, 0, false);
    }

    T *GetPhyAddr() const { return ptr_; }
    T *GetPhyAddr(uint64_t offset) const { return ptr_ + offset; }
    uint64_t GetSize() const { return size_; }

    // The mode stays with the tensor through SetGlobalBuffer and operator[], as in CANN.
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode)
    {
        cache_mode_ = mode;
    }
    bool BypassesL2() const { return cache_mode_ == CacheMode::CACHE_MODE_DISABLE; }

private:
    T *ptr_ = nullptr;
    uint64_t size_ = 0;
    CacheMode cache_mode_ = CacheMode::CACHE_MODE_NORMAL;
};

}  // namespace AscendC
