// SPDX-License-Identifier: BSD-3-Clause
// A first-fit allocator over one MAP_SHARED | MAP_NORESERVE reservation: address space is cheap,
// pages are made when first touched and removed (MADV_REMOVE) when a range is given back.
#include "gm_arena.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace twin::host {
namespace {

class Arena {
public:
    Arena()
    {
        // As large as the system lets us reserve: strict overcommit refuses big NORESERVE maps.
        for (size_t bytes = size_t(1) << 38; bytes >= (size_t(1) << 30) && base_ == nullptr; bytes /= 2) {
            void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p != MAP_FAILED) {
                base_ = static_cast<uint8_t *>(p);
                size_ = bytes;
                free_.emplace(0, bytes);
            }
        }
    }

    void Lock() { mutex_.lock(); }
    void Unlock() { mutex_.unlock(); }

    // In the child of a fork that is not a launch process's, with mutex_ held (since the prepare
    // handler): the ranges in use are copied out, a fresh mapping replaces the one shared with the
    // parent, and they are copied back.
    void Privatise()
    {
        std::map<size_t, std::vector<uint8_t>> used;
        size_t at = 0;
        for (const auto &[offset, length] : free_) {
            if (offset > at) {
                used.emplace(at, std::vector<uint8_t>(base_ + at, base_ + offset));
            }
            at = offset + length;
        }
        if (at < size_) {
            used.emplace(at, std::vector<uint8_t>(base_ + at, base_ + size_));
        }
        mmap(base_, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        for (const auto &[offset, bytes] : used) {
            std::memcpy(base_ + offset, bytes.data(), bytes.size());
        }
    }

    uint8_t *Take(size_t bytes)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second >= bytes) {
                const size_t at = it->first, left = it->second - bytes;
                free_.erase(it);
                if (left != 0) {
                    free_.emplace(at + bytes, left);
                }
                return base_ + at;
            }
        }
        throw std::bad_alloc();
    }

    void Give(uint8_t *p, size_t bytes)
    {
        madvise(p, bytes, MADV_REMOVE);
        std::lock_guard<std::mutex> lock(mutex_);
        size_t at = size_t(p - base_);
        auto next = free_.lower_bound(at);
        if (next != free_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == at) {
                at = prev->first;
                bytes += prev->second;
                free_.erase(prev);
            }
        }
        if (next != free_.end() && at + bytes == next->first) {
            bytes += next->second;
            free_.erase(next);
        }
        free_.emplace(at, bytes);
    }

private:
    uint8_t *base_ = nullptr;
    size_t size_ = 0;
    std::mutex mutex_;
    std::map<size_t, size_t> free_;  // offset -> length of the free ranges
};

Arena *g_arena = nullptr;

void BeforeFork()
{
    if (!t_forking_launch_process) {
        g_arena->Lock();
    }
}
void InParentAfterFork()
{
    if (!t_forking_launch_process) {
        g_arena->Unlock();
    }
}
void InChildAfterFork()
{
    if (!t_forking_launch_process) {
        g_arena->Privatise();
        g_arena->Unlock();
    }
}

// Never destroyed: buffers of NumPy arrays may outlive the extension's static destructors.
Arena &TheArena()
{
    static Arena *arena = [] {
        g_arena = new Arena();
        pthread_atfork(BeforeFork, InParentAfterFork, InChildAfterFork);
        return g_arena;
    }();
    return *arena;
}

}  // namespace

thread_local bool t_forking_launch_process = false;

void ArenaReserve() { TheArena(); }
uint8_t *ArenaTake(size_t bytes) { return TheArena().Take(bytes); }
void ArenaGive(uint8_t *p, size_t bytes) { TheArena().Give(p, bytes); }

}  // namespace twin::host
