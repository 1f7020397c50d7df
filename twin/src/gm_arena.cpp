// A first-fit allocator over one MAP_SHARED | MAP_NORESERVE reservation: address space is cheap,
// pages are made when first touched and removed (MADV_REMOVE) when a range is given back.
#include "gm_arena.h"

#include <sys/mman.h>

#include <iterator>
#include <map>
#include <mutex>
#include <new>

namespace twin_host {
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
                free_.emplace(0, bytes);
            }
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
    std::mutex mutex_;
    std::map<size_t, size_t> free_;  // offset -> length of the free ranges
};

// Never destroyed: buffers of NumPy arrays may outlive the extension's static destructors.
Arena &TheArena()
{
    static Arena *arena = new Arena();
    return *arena;
}

}  // namespace

void ArenaReserve() { TheArena(); }
uint8_t *ArenaTake(size_t bytes) { return TheArena().Take(bytes); }
void ArenaGive(uint8_t *p, size_t bytes) { TheArena().Give(p, bytes); }

}  // namespace twin_host
