// SPDX-License-Identifier: BSD-3-Clause
// The memory side of the timeline (timeline.h): which GM bytes a copy brings from HBM and which
// from L2, and each core's draw on the SoC-wide HBM pool over time.
//
// HBM is one SoC-wide pool (the SoC's HBM rate) shared by the cores that move bytes, each
// capped by its link rate per direction. How many cores move bytes while one does is the named
// assumption hbm_phase_overlap: 0, the cores move bytes in step (every launched core shares the pool
// whenever this one draws on it: what ADD's serial cases show), 1, their phases are independent (the
// others move bytes for the fraction of time this core does, so a core that mostly computes borrows
// what the others leave). Each core judges from its own timeline, so the result does not depend on
// the order the core threads run in. Where writes land is the assumption write_hbm_fraction: the
// share of written bytes the pool is charged for while the kernel runs (the rest lands in L2).
// A GM byte read again in the same launch comes from L2 at the L2 link rate while the traffic since
// its last touch fits L2 (reuse distance, measured in modelled time at the full HBM rate); otherwise,
// and for every first touch and every write, it counts as HBM bytes.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace twin {

// Which GM bytes were touched in this launch, and when (modelled cycles): 512-byte lines, each with
// the time of its last touch and a mask of its 32-byte sectors wholly touched; the few sectors a
// copy covers only in part (its unaligned ends) keep a byte mask aside, so first touches are counted
// to the byte. Shared by all cores.
class L2Model {
public:
    struct Split {
        uint64_t hbm = 0;
        uint64_t l2 = 0;
    };

    void Init(double window_cycles) { window_ = window_cycles; }

    // `blocks` blocks of `len` bytes, `pitch` bytes apart, touched at cycle t.
    Split Touch(const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, double t, bool write)
    {
        Split s;
        const uint64_t base = reinterpret_cast<uintptr_t>(gm);
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint32_t i = 0; i < blocks && len > 0; ++i) {
            TouchRange(base + i * pitch, base + i * pitch + len, t, write, s);
        }
        return s;
    }

private:
    static constexpr int kLineShift = 9, kSectorShift = 5, kPageShift = 21;
    static constexpr uint64_t kSector = 1ull << kSectorShift;
    static constexpr uint64_t kLinesPerPage = 1ull << (kPageShift - kLineShift);
    struct Page {
        float stamp[kLinesPerPage];
        uint16_t sectors[kLinesPerPage];  // wholly touched sectors
        uint16_t parts[kLinesPerPage];    // sectors touched in part (their byte masks are in parts_)
        uint8_t touched[kLinesPerPage];
    };
    struct Line {
        Page &page;
        uint64_t k;
    };

    void TouchRange(uint64_t lo, uint64_t hi, double t, bool write, Split &s)
    {
        const uint64_t a = (lo + kSector - 1) & ~(kSector - 1), b = hi & ~(kSector - 1);
        if (a > b) {  // inside one sector, touching neither of its ends
            TouchPart(lo, hi, t, write, s);
            return;
        }
        if (lo < a) {
            TouchPart(lo, a, t, write, s);
        }
        for (uint64_t at = a, line = a >> kLineShift; at < b; ++line) {
            const uint64_t end = std::min(b, (line + 1) << kLineShift);
            const Line l = LineOf(line);
            const uint16_t bits = SectorBits(at, end), seen = l.page.sectors[l.k] & bits;
            uint64_t again = uint64_t(__builtin_popcount(seen)) * kSector;
            for (uint16_t rest = bits & l.page.parts[l.k]; rest != 0; rest &= rest - 1) {
                again += PartSeen(((line << kLineShift) >> kSectorShift) + __builtin_ctz(rest));
            }
            Count(l, end - at, again, t, write, s);
            l.page.sectors[l.k] |= bits;
            l.page.parts[l.k] &= uint16_t(~bits);
            at = end;
        }
        if (b < hi && b >= lo) {
            TouchPart(b, hi, t, write, s);
        }
    }
    // Bytes [lo, hi) of one sector.
    void TouchPart(uint64_t lo, uint64_t hi, double t, bool write, Split &s)
    {
        const uint64_t sector = lo >> kSectorShift;
        const Line l = LineOf(lo >> kLineShift);
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
        Count(l, hi - lo, again, t, write, s);
    }
    // Bytes of a sector touched in part before, now wholly touched.
    uint64_t PartSeen(uint64_t sector)
    {
        auto it = parts_.find(sector);
        const uint64_t n = uint64_t(__builtin_popcount(it->second));
        parts_.erase(it);
        return n;
    }
    // n bytes of a line, `again` of them touched before: a read of those hits L2 while fresh.
    void Count(const Line &l, uint64_t n, uint64_t again, double t, bool write, Split &s)
    {
        const bool fresh = l.page.touched[l.k] && std::fabs(t - double(l.page.stamp[l.k])) <= window_;
        if (write || !fresh) {
            s.hbm += n;
        } else {
            s.hbm += n - again;
            s.l2 += again;
        }
        l.page.stamp[l.k] = l.page.touched[l.k] ? float(std::max(double(l.page.stamp[l.k]), t)) : float(t);
        l.page.touched[l.k] = 1;
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
            p = std::make_unique<Page>();  // value-initialised: nothing touched
        }
        return Line{*p, line & (kLinesPerPage - 1)};
    }

    double window_ = 0;
    std::mutex mutex_;
    std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
    std::unordered_map<uint64_t, uint32_t> parts_;  // sector -> byte mask of a sector touched in part
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
