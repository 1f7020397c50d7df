// SPDX-License-Identifier: BSD-3-Clause
// CANN's stack buffer: the UB past the TPipe's buffers, up to the UB less the 64-byte KFC message
// slot that the A2 toolchain keeps at its end. PopStackBuffer hands it out as one tensor (the
// advanced API's temporary space when the kernel gives none); InitOutput fills a GM range with a
// value through it: Duplicate of at most 255 blocks, a V -> MTE3 flag, then one DataCopyPad per
// chunk. Rules: a TPipe must exist (the stack starts where its buffers end) and some UB must be left
// past them; the bytes the stack buffer uses count toward the core's UB peak, so a kernel that
// leaves it too little is refused here as on the NPU (CPU-debug's PopStackBuffer check).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "data_copy.h"
#include "local_alloc.h"
#include "sync.h"
#include "tpipe.h"
#include "vector_fill.h"

namespace twin {

inline constexpr uint32_t kKfcMsgBytes = 64;  // the UB's last 64 bytes: the KFC message slot on A2

// [begin, end) of the stack buffer on this core.
inline std::pair<uint32_t, uint32_t> StackBuffer(const char *call)
{
    const AscendC::TPipe *pipe = AscendC::GetTPipePtr();
    TWIN_CHECK(pipe != nullptr, call, "draws UB from the stack buffer past the TPipe's buffers: a TPipe must exist");
    const uint32_t begin = uint32_t(pipe->GetQueueEndAddress<AscendC::TPosition::VECCALC>());
    const uint32_t end = Core().soc->ub_bytes - kKfcMsgBytes;
    TWIN_CHECK(end > begin, call, "no UB is left for the stack buffer past the TPipe's buffers (they end at byte ",
               begin, ", the stack buffer must end by ", end, ")");
    return {begin, end};
}

// True when the UB at [begin, begin + count elements) is defined and holds `value` in every element.
template <typename T>
bool StackHolds(uint32_t begin, uint32_t count, T value)
{
    const CoreState &core = Core();
    for (uint32_t i = 0; i < count * sizeof(T); ++i) {
        if (core.shadow[begin + i] == 0) {
            return false;
        }
    }
    for (uint32_t i = 0; i < count; ++i) {
        if (std::memcmp(&core.ub[begin + i * sizeof(T)], &value, sizeof(T)) != 0) {
            return false;
        }
    }
    return true;
}

inline void CountStackBytes(uint32_t end)
{
    Counters &c = Core().counters;
    c.ub_peak_bytes = std::max<uint64_t>(c.ub_peak_bytes, end);
}

}  // namespace twin

namespace AscendC {

template <typename T, TPosition pos>
bool PopStackBuffer(LocalTensor<T> &pop)
{
    const auto [begin, end] = twin::StackBuffer("PopStackBuffer");
    twin::CountStackBytes(end);
    pop = LocalTensor<T>(pos, begin, (end - begin) / sizeof(T));
    return true;
}

// Deprecated in favour of Fill, still what ops-nn's kernels call to zero a GM output or workspace.
template <typename T>
void InitOutput(GlobalTensor<T> gm, uint32_t size, T value)
{
    const auto [begin, end] = twin::StackBuffer("InitOutput");
    const uint32_t max_burst = uint32_t(MAX_REPEAT_TIMES) * ONE_BLK_SIZE / sizeof(T);
    const uint32_t pop = std::min<uint32_t>((end - begin) / sizeof(T), max_burst);
    twin::CountStackBytes(begin + pop * sizeof(T));
    LocalTensor<T> stack(TPosition::VECCALC, begin, pop);
    if (twin::StackHolds(begin, pop, value)) {
        // An earlier InitOutput's copies may still read these bytes (CANN's InitOutput does not wait
        // for its MTE3): rewriting the same value there changes nothing on the NPU, so it is ordered.
        const TEventID wait = GetTPipePtr()->FetchEventID(HardEvent::MTE3_V);
        SetFlag<HardEvent::MTE3_V>(wait);
        WaitFlag<HardEvent::MTE3_V>(wait);
    }
    Duplicate(stack, value, int32_t(pop));
    const TEventID id = GetTPipePtr()->FetchEventID(HardEvent::V_MTE3);
    SetFlag<HardEvent::V_MTE3>(id);
    WaitFlag<HardEvent::V_MTE3>(id);
    const uint32_t rounds = size / pop;
    const uint32_t tail = size % pop;
    for (uint32_t i = 0; i < rounds; ++i) {
        DataCopyPad(gm[uint64_t(i) * pop], stack, DataCopyExtParams(1, pop * sizeof(T), 0, 0, 0));
    }
    if (tail != 0) {
        DataCopyPad(gm[uint64_t(rounds) * pop], stack, DataCopyExtParams(1, tail * sizeof(T), 0, 0, 0));
    }
}

}  // namespace AscendC
