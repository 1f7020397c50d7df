// SPDX-License-Identifier: BSD-3-Clause
// Guarded GM buffers, their pool, and gm_empty: NumPy arrays that live in guarded GM memory.
#include "gm_buffer.h"

#include "gm_arena.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace py = pybind11;

namespace twin::host {
namespace {

// Up to kPoolBytes of freed buffer memory stays cached for the next launch (its pages stay made).
class BlockPool {
public:
    static constexpr size_t kPoolBytes = size_t(1) << 30;

    static uint8_t *Take(size_t bytes)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = free_.find(bytes);
            if (it != free_.end()) {
                uint8_t *p = it->second;
                free_.erase(it);
                cached_ -= bytes;
                return p;
            }
        }
        return ArenaTake(bytes);
    }
    static void Give(uint8_t *p, size_t bytes)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        while (cached_ + bytes > kPoolBytes && !free_.empty()) {
            auto largest = std::prev(free_.end());
            ArenaGive(largest->second, largest->first);
            cached_ -= largest->first;
            free_.erase(largest);
        }
        if (bytes > kPoolBytes) {
            ArenaGive(p, bytes);
            return;
        }
        free_.emplace(bytes, p);
        cached_ += bytes;
    }

private:
    static inline std::mutex mutex_;
    static inline std::multimap<size_t, uint8_t *> free_;
    static inline size_t cached_ = 0;
};

std::mutex g_resident_mutex;
std::map<const void *, GuardedBuffer *> g_resident;  // gm_empty buffers by data address

}  // namespace

GuardedBuffer::GuardedBuffer(size_t bytes, uint64_t seed)
    : total_((2 * kGuard + bytes + 4095) / 4096 * 4096), base_(BlockPool::Take(total_)), bytes_(bytes), seed_(seed)
{
    ResetGuards();
}

GuardedBuffer::~GuardedBuffer() { BlockPool::Give(base_, total_); }

void GuardedBuffer::ResetGuards()
{
    for (size_t i = 0; i < kGuard; ++i) {
        base_[i] = Canary(i);
        data()[bytes_ + i] = Canary(kGuard + i);
    }
}

std::string GuardedBuffer::Damage() const
{
    for (size_t i = 0; i < kGuard; ++i) {
        if (base_[i] != Canary(i)) {
            return "a write reaching " + std::to_string(kGuard - i) + " bytes before its start";
        }
    }
    for (size_t i = kGuard; i-- > 0;) {
        if (data()[bytes_ + i] != Canary(kGuard + i)) {
            return "a write reaching " + std::to_string(i + 1) + " bytes past its end";
        }
    }
    return {};
}

GuardedBuffer *FindResident(const void *data, size_t bytes)
{
    std::lock_guard<std::mutex> lock(g_resident_mutex);
    auto it = g_resident.find(data);
    return it != g_resident.end() && it->second->bytes() == bytes ? it->second : nullptr;
}

void ParallelCopy(const std::vector<CopyJob> &jobs)
{
    constexpr size_t kMinPerThread = size_t(4) << 20;
    size_t total = 0;
    for (const CopyJob &j : jobs) {
        total += j.bytes;
    }
    const size_t threads =
        std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), total / kMinPerThread));
    const size_t share = (total + threads - 1) / threads;
    // Worker t copies bytes [t * share, (t + 1) * share) of the jobs laid end to end.
    auto work = [&](size_t t) {
        const size_t lo = t * share, hi = std::min(total, lo + share);
        size_t at = 0;
        for (const CopyJob &j : jobs) {
            const size_t a = std::max(lo, at), b = std::min(hi, at + j.bytes);
            if (a < b) {
                std::memcpy(j.dst + (a - at), j.src + (a - at), b - a);
            }
            at += j.bytes;
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) {
        pool.emplace_back(work, t);
    }
    work(0);
    for (std::thread &th : pool) {
        th.join();
    }
}

}  // namespace twin::host

void BindGmBuffers(py::module_ &m)
{
    m.def(
        "gm_empty",
        [](size_t bytes) {
            auto *buffer = new twin::host::GuardedBuffer(bytes, std::random_device{}());
            {
                std::lock_guard<std::mutex> lock(twin::host::g_resident_mutex);
                twin::host::g_resident[buffer->data()] = buffer;
            }
            py::capsule owner(buffer, [](void *p) {
                auto *b = static_cast<twin::host::GuardedBuffer *>(p);
                {
                    std::lock_guard<std::mutex> lock(twin::host::g_resident_mutex);
                    twin::host::g_resident.erase(b->data());
                }
                delete b;
            });
            return py::array_t<uint8_t>({bytes}, {size_t(1)}, buffer->data(), owner);
        },
        py::arg("bytes"),
        "A uint8 array of `bytes` (uninitialised) in guarded GM memory: launches use it without copies.");
}
