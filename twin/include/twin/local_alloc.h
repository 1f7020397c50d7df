// SPDX-License-Identifier: BSD-3-Clause
// Static tensors: LocalTensor(TPosition, addr, tileSize) names UB bytes by address, without a TPipe,
// and LocalMemAllocator<Hardware::UB> hands out such tensors one after another from address 0.
// Rules guarded here (those of the CPU-debug checks): a position other than GM / MAX, the address
// 32-byte aligned, tileSize > 0 with a length that is a multiple of 32 bytes, the tensor inside UB,
// and one LocalMemAllocator per hardware position at a time. Tensors at the same address and
// length share one buffer for the pipe-hazard checks; the twin does not track hazards between
// overlapping static tensors of different extents.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "memory.h"

namespace AscendC {

enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

}  // namespace AscendC

namespace twin {

// The buffers behind one core's static tensors, by (address, bytes). Kept per thread and dropped
// when the thread runs another core.
struct StaticBuffers {
    const CoreState *core = nullptr;
    std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<BufferSlot>> slots;
    bool ub_allocator_alive = false;
};

inline StaticBuffers &Statics()
{
    static thread_local StaticBuffers statics;
    CoreState &core = Core();
    if (statics.core != &core) {
        statics.slots.clear();
        statics.core = &core;
        statics.ub_allocator_alive = false;
    }
    return statics;
}

inline BufferSlot *StaticSlot(AscendC::TPosition pos, uint32_t addr, uint64_t bytes)
{
    const char *call = "LocalTensor(TPosition, addr, tileSize)";
    TWIN_CHECK(pos != AscendC::TPosition::GM && pos != AscendC::TPosition::MAX, call,
               "the position must be a local memory position, not GM or MAX");
    TWIN_CHECK(addr % kUbBlockBytes == 0, call, "addr must be 32-byte aligned (got ", addr, ")");
    TWIN_CHECK(bytes > 0, call, "tileSize must be greater than 0");
    TWIN_CHECK(bytes % kUbBlockBytes == 0, call, "the tensor length must be a multiple of 32 bytes (tileSize x "
               "element size = ", bytes, " bytes)");
    const uint32_t ub = Core().soc->ub_bytes;
    TWIN_CHECK(uint64_t(addr) + bytes <= ub, call, "the tensor must lie inside the Unified Buffer (addr ", addr, " + ",
               bytes, " bytes > ", ub, ")");
    std::unique_ptr<BufferSlot> &slot = Statics().slots[{addr, uint32_t(bytes)}];
    if (!slot) {
        slot = std::make_unique<BufferSlot>();
        slot->offset = addr;
        slot->bytes = uint32_t(bytes);
        slot->state = BufferSlot::State::Allocated;
        slot->owner = "static tensor";
    }
    return slot.get();
}

}  // namespace twin

namespace AscendC {

template <typename T>
LocalTensor<T>::LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize)
    : LocalTensor(twin::StaticSlot(pos, addr, uint64_t(tileSize) * sizeof(T)), addr, tileSize)
{
}

// Hands out static tensors back to back from UB address 0 (A2 has no dynamic UB start).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
public:
    LocalMemAllocator()
    {
        // L1 compiles so that a file holding a cube kernel next to vector ones builds; the cube kernel
        // itself is refused at launch, and a vector core reaching this has no L1.
        static_assert(hard == Hardware::UB || hard == Hardware::L1,
                      "the twin emulates an AI vector core: only Hardware::UB exists (and L1 for cube kernels' code)");
        TWIN_CHECK(hard == Hardware::UB, "LocalMemAllocator", "an AI vector core has no L1 buffer: "
                   "LocalMemAllocator<Hardware::L1> belongs in a cube kernel, which needs an NPU");
        twin::StaticBuffers &statics = twin::Statics();
        TWIN_CHECK(!statics.ub_allocator_alive, "LocalMemAllocator",
                   "only one LocalMemAllocator may exist per hardware position at a time");
        statics.ub_allocator_alive = true;
    }
    LocalMemAllocator(const LocalMemAllocator &) = delete;
    LocalMemAllocator &operator=(const LocalMemAllocator &) = delete;
    ~LocalMemAllocator()
    {
        if (twin::g_core != nullptr) twin::Statics().ub_allocator_alive = false;
    }

    uint32_t GetCurAddr() const { return head_; }

    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() { return Take<DataType>(pos, tileSize); }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) { return Take<DataType>(pos, tileSize); }
    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() { return Take<DataType>(TPosition::VECCALC, tileSize); }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) { return Take<DataType>(TPosition::VECCALC, tileSize); }

private:
    template <class DataType>
    LocalTensor<DataType> Take(TPosition pos, uint32_t tileSize)
    {
        LocalTensor<DataType> out(pos, head_, tileSize);
        head_ += uint32_t(sizeof(DataType) * tileSize);
        return out;
    }
    uint32_t head_ = 0;
};

}  // namespace AscendC
