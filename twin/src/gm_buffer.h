// SPDX-License-Identifier: BSD-3-Clause
// GM buffers of the twin's launches: each one surrounded by guard canaries, so a raw pointer write
// outside it (which bypasses the twin's own GM bounds checks) is found after the launch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace twin::host {

// [guard][data][guard], data 1024-byte aligned like a device allocation. The memory comes from a
// pool kept across launches (fresh pages cost a page fault and a clearing per 4 KiB) over the
// shared arena (gm_arena.h), which the launch process writes into.
class GuardedBuffer {
public:
    static constexpr size_t kGuard = 1024;

    GuardedBuffer(size_t bytes, uint64_t seed);
    ~GuardedBuffer();
    GuardedBuffer(const GuardedBuffer &) = delete;
    GuardedBuffer &operator=(const GuardedBuffer &) = delete;

    uint8_t *data() const { return base_ + kGuard; }
    size_t bytes() const { return bytes_; }
    void ResetGuards();
    // Empty when both guards are intact; else which one and how far from the data it was hit.
    std::string Damage() const;

private:
    uint8_t Canary(size_t i) const { return uint8_t((i * 0x9E3779B97F4A7C15ull + seed_) >> 56) ^ 0x5A; }
    size_t total_;
    uint8_t *base_;
    size_t bytes_;
    uint64_t seed_;
};

// The buffer made by gm_empty whose data is exactly [data, data + bytes), or nullptr: such arrays
// are GM already and run without copies.
GuardedBuffer *FindResident(const void *data, size_t bytes);

struct CopyJob {
    uint8_t *dst;
    const uint8_t *src;
    size_t bytes;
};
// memcpy of all jobs, spread over the host's cores (large launches are otherwise copy-bound).
void ParallelCopy(const std::vector<CopyJob> &jobs);

}  // namespace twin::host
