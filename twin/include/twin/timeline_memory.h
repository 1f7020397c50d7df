// SPDX-License-Identifier: BSD-3-Clause
// The memory side of the timeline (timeline.h): which GM bytes a copy brings from HBM and which
// from L2, what L2 writes back to HBM, and each core's draw on the SoC-wide HBM pool over time.
//
// HBM is one SoC-wide pool (the SoC's HBM rate) shared by the cores that move bytes, each
// capped by its link rate per direction. How many cores move bytes while one does is the named
// assumption hbm_phase_overlap: 0, the cores move bytes in step (every launched core shares the pool
// whenever this one draws on it: what ADD's serial cases show), 1, their phases are independent (the
// others move bytes for the fraction of time this core does, so a core that mostly computes borrows
// what the others leave). Each core judges from its own timeline.
//
// L2 is a write-back cache of l2_capacity_fraction x the SoC's L2 bytes, in 512-byte lines, least
// recently used out first. A normal read allocates its lines; a read of bytes the cache holds comes
// from L2, every other read byte from HBM. A write to a line L2 holds, or while L2 has room, lands
// in L2 and marks its sectors dirty; a write that would push a line out goes to HBM instead (the
// write policy is the calibration's choice: with writes allocating like reads, ADD case 4 comes out
// 15 % faster than measured, as most of z would stay in L2; with this one, cases 3, 4 and 5 fit).
// A dirty line a read pushes out is written back to HBM, charged to that read, when it happens. A copy whose GM tensor bypasses L2 (CACHE_MODE_DISABLE) reads or writes HBM and
// allocates nothing. What is still dirty when the launch ends costs the launch nothing (the rule of
// the model: the write-back happens after the kernel, under whatever runs next). The cores apply
// their accesses in the order of the launch's arbiter (timeline.h): by modelled cycle, then core id.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>

namespace twin {

// The cache: 512-byte lines, each with a mask of its 32-byte sectors wholly held and one of those
// dirty; the few sectors a copy covers only in part (its unaligned ends) keep a byte mask aside, so
// first reads are counted to the byte. Lines are chained most recently used first.
class L2Model {
public:
    struct Split {
        uint64_t hbm = 0;          // bytes of this copy HBM moved (read misses, bypassing copies)
        uint64_t l2 = 0;           // bytes of this copy read from L2
        uint64_t written_back = 0;  // dirty bytes of other lines this copy pushed out to HBM
    };

    void Init(uint64_t capacity_bytes) { capacity_ = std::max<uint64_t>(capacity_bytes >> kLineShift, 1); }

    // `blocks` blocks of `len` bytes, `pitch` bytes apart, read or written through L2 (defined in
    // launch_runtime.cpp: the cache's code is compiled once, not into every kernel).
    Split Touch(const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, bool write);
    uint64_t DirtyBytes() const { return dirty_bytes_; }

private:
    static constexpr int kLineShift = 9, kSectorShift = 5, kPageShift = 21;
    static constexpr uint64_t kSector = 1ull << kSectorShift;
    static constexpr uint64_t kLinesPerPage = 1ull << (kPageShift - kLineShift);
    static constexpr uint64_t kNone = ~0ull;
    struct Page {
        uint64_t prev[kLinesPerPage], next[kLinesPerPage];  // the recency chain (line numbers)
        uint16_t sectors[kLinesPerPage];  // wholly held sectors
        uint16_t parts[kLinesPerPage];    // sectors held in part (their byte masks are in parts_)
        uint16_t dirty[kLinesPerPage];    // sectors written since the line came in
        uint8_t resident[kLinesPerPage];
    };
    struct Line {
        Page &page;
        uint64_t k;
    };

    void TouchRange(uint64_t lo, uint64_t hi, bool write, Split &s)
    {
        const uint64_t a = (lo + kSector - 1) & ~(kSector - 1), b = hi & ~(kSector - 1);
        if (a > b) {  // inside one sector, touching neither of its ends
            TouchPart(lo, hi, write, s);
            return;
        }
        if (lo < a) {
            TouchPart(lo, a, write, s);
        }
        for (uint64_t at = a, line = a >> kLineShift; at < b; ++line) {
            const uint64_t end = std::min(b, (line + 1) << kLineShift);
            if (write && !Room(line)) {
                s.hbm += end - at;
                at = end;
                continue;
            }
            const Line l = Use(line, s);
            const uint16_t bits = SectorBits(at, end), seen = l.page.sectors[l.k] & bits;
            uint64_t again = uint64_t(__builtin_popcount(seen)) * kSector;
            for (uint16_t rest = bits & l.page.parts[l.k]; rest != 0; rest &= rest - 1) {
                again += PartSeen(((line << kLineShift) >> kSectorShift) + __builtin_ctz(rest));
            }
            Count(l, end - at, again, bits, write, s);
            l.page.sectors[l.k] |= bits;
            l.page.parts[l.k] &= uint16_t(~bits);
            at = end;
        }
        if (b < hi && b >= lo) {
            TouchPart(b, hi, write, s);
        }
    }
    // Bytes [lo, hi) of one sector.
    void TouchPart(uint64_t lo, uint64_t hi, bool write, Split &s)
    {
        const uint64_t sector = lo >> kSectorShift;
        if (write && !Room(lo >> kLineShift)) {
            s.hbm += hi - lo;
            return;
        }
        const Line l = Use(lo >> kLineShift, s);
        const uint16_t bit = uint16_t(1u << (sector & 15));
        const uint32_t cover = uint32_t(((1ull << (hi - lo)) - 1) << (lo & (kSector - 1)));
        uint64_t again = hi - lo;
        if ((l.page.sectors[l.k] & bit) == 0) {
            uint32_t &mask = parts_[sector];
            again = uint64_t(__builtin_popcount(mask & cover));
            mask |= cover;
            l.page.parts[l.k] |= bit;
            if (mask == ~0u) {
                parts_.erase(sector);
                l.page.sectors[l.k] |= bit;
                l.page.parts[l.k] &= uint16_t(~bit);
            }
        }
        Count(l, hi - lo, again, bit, write, s);
    }
    // Bytes of a sector held in part before, now wholly held.
    uint64_t PartSeen(uint64_t sector)
    {
        auto it = parts_.find(sector);
        const uint64_t n = uint64_t(__builtin_popcount(it->second));
        parts_.erase(it);
        return n;
    }
    // n bytes of a line in sectors `bits`, `again` of them held before: a read of those hits L2, a
    // read of the rest comes from HBM; a write lands in L2.
    void Count(const Line &l, uint64_t n, uint64_t again, uint16_t bits, bool write, Split &s)
    {
        if (write) {
            dirty_bytes_ += uint64_t(__builtin_popcount(bits & ~l.page.dirty[l.k])) * kSector;
            l.page.dirty[l.k] |= bits;
        } else {
            s.hbm += n - again;
            s.l2 += again;
        }
    }
    // Whether a write to the line lands in L2: the line is there, or L2 has room for it without
    // pushing another out.
    bool Room(uint64_t line)
    {
        const Line l = LineOf(line);
        return l.page.resident[l.k] || lines_ < capacity_;
    }
    // The line, resident and most recently used; lines pushed out on the way are written back.
    Line Use(uint64_t line, Split &s)
    {
        const Line l = LineOf(line);
        if (l.page.resident[l.k]) {
            if (head_ != line) {
                Unlink(l, line);
                Link(l, line);
            }
            return l;
        }
        l.page.resident[l.k] = 1;
        Link(l, line);
        if (++lines_ > capacity_) {
            Evict(tail_, s);
        }
        return l;
    }
    void Evict(uint64_t line, Split &s)
    {
        const Line l = LineOf(line);
        const uint64_t dirty = uint64_t(__builtin_popcount(l.page.dirty[l.k])) * kSector;
        s.written_back += dirty;
        dirty_bytes_ -= dirty;
        for (uint16_t rest = l.page.parts[l.k]; rest != 0; rest &= rest - 1) {
            parts_.erase(((line << kLineShift) >> kSectorShift) + __builtin_ctz(rest));
        }
        Unlink(l, line);
        l.page.sectors[l.k] = l.page.parts[l.k] = l.page.dirty[l.k] = 0;
        l.page.resident[l.k] = 0;
        --lines_;
    }
    void Link(const Line &l, uint64_t line)  // at the head
    {
        l.page.prev[l.k] = kNone;
        l.page.next[l.k] = head_;
        if (head_ != kNone) {
            const Line h = LineOf(head_);
            h.page.prev[h.k] = line;
        } else {
            tail_ = line;
        }
        head_ = line;
    }
    void Unlink(const Line &l, uint64_t line)
    {
        const uint64_t prev = l.page.prev[l.k], next = l.page.next[l.k];
        if (prev != kNone) {
            const Line p = LineOf(prev);
            p.page.next[p.k] = next;
        } else {
            head_ = next;
        }
        if (next != kNone) {
            const Line q = LineOf(next);
            q.page.prev[q.k] = prev;
        } else {
            tail_ = prev;
        }
    }
    static uint16_t SectorBits(uint64_t lo, uint64_t hi)
    {
        const int first = int((lo >> kSectorShift) & 15), last = int(((hi - 1) >> kSectorShift) & 15);
        return uint16_t(((1u << (last + 1)) - 1) & ~((1u << first) - 1));
    }
    Line LineOf(uint64_t line)
    {
        std::unique_ptr<Page> &p = pages_[line >> (kPageShift - kLineShift)];
        if (!p) {
            p = std::make_unique<Page>();  // value-initialised: nothing held
        }
        return Line{*p, line & (kLinesPerPage - 1)};
    }

    uint64_t capacity_ = 1, lines_ = 0, dirty_bytes_ = 0;
    uint64_t head_ = kNone, tail_ = kNone;
    std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
    std::unordered_map<uint64_t, uint32_t> parts_;  // sector -> byte mask of a sector held in part
};

// One core's draw on the HBM pool over time: the intervals in which it is in use. MTE2 and MTE3
// transfers take turns in it; a transfer fills the free gaps from when it is ready on, so copies
// recorded in program order but overlapping in time share the bandwidth instead of queueing.
class HbmChannel {
public:
    // Uses `cycles` of the channel from `ready` on; returns when the last of them is used.
    double Place(double ready, double cycles)
    {
        busy_ += cycles;
        double t = ready;
        while (cycles > kEpsilon) {
            auto it = used_.upper_bound(t);
            if (it != used_.begin() && std::prev(it)->second > t) {
                t = std::prev(it)->second;  // inside a used interval: skip to its end
                continue;
            }
            const double take = it == used_.end() ? cycles : std::min(cycles, it->first - t);
            Insert(t, t + take);
            cycles -= take;
            t += take;
        }
        return t;
    }
    // Nothing will be placed before `horizon` any more.
    void Forget(double horizon)
    {
        while (!used_.empty() && used_.begin()->second <= horizon) {
            used_.erase(used_.begin());
        }
    }
    double Busy() const { return busy_; }

private:
    void Insert(double lo, double hi)
    {
        auto next = used_.lower_bound(lo);
        if (next != used_.begin() && std::prev(next)->second >= lo) {
            --next;
            lo = next->first;
            hi = std::max(hi, next->second);
            next = used_.erase(next);
        }
        while (next != used_.end() && next->first <= hi) {
            hi = std::max(hi, next->second);
            next = used_.erase(next);
        }
        used_.emplace(lo, hi);
    }

    static constexpr double kEpsilon = 1e-6;  // cycles: rounding, not time
    std::map<double, double> used_;  // start -> end, disjoint
    double busy_ = 0;
};

}  // namespace twin
