// The performance timeline of the twin. Every instruction of a core is placed on its pipe (S issues,
// V computes, MTE2 copies GM -> UB, MTE3 copies UB -> GM) at the earliest time the kernel's own
// synchronisation allows (EnQue -> DeQue, FreeTensor -> the next AllocTensor of that buffer,
// SetFlag -> WaitFlag, PipeBarrier<PIPE_ALL>, SyncAll across cores) and given a modelled duration.
// A core's makespan is when its last pipe finishes; the busiest core's makespan plus the launch cost
// is the modelled kernel time (the Python side adds the launch cost and reports).
//
// Memory: HBM is one SoC-wide pool (the SoC's HBM rate) shared by the cores that move bytes, each
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
// Recording costs O(1) per instruction plus O(bytes / 512) for the L2 bookkeeping of a copy.
//
// SoC facts come from platform.h; the constants below are the model's own.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "platform.h"

namespace twin {

// Model-only constants per SoC; where each comes from is in kModelFields (the Python performance
// package reads both through the extension: one source). Each source begins with its kind:
// "measured" (a public measurement on the hardware, cited), "guide" (a rule or figure of CANN's
// programming guide), "range" (a published range; the point taken in it is ours) or "assumption"
// (nobody measured it). `bench --sensitivity` varies the range and assumption kinds.
struct ModelConstants {
    const char *soc;
    double vector_cycles_per_repeat;
    double vector_issue_cycles;
    double reduce_issue_factor;
    double cast_repeat_factor;
    double copy_issue_cycles;
    double gm_burst_bytes;
    double scalar_issue_cycles;
    double scalar_gm_cycles;
    double sync_all_cycles;
    double launch_us;
    double l2_reuse_fraction;
    double hbm_phase_overlap;
    double write_hbm_fraction;
    double pipe_barrier_cycles;
    double flag_sync_cycles;
};

inline constexpr ModelConstants kModelTable[] = {
    {"Ascend910B2", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 1.0, 8.0, 16.0},
    {"Ascend910B3", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 1.0, 8.0, 16.0},
    {"Ascend910_93", 1.0, 22.6, 3.5, 1.0, 113.0, 512.0, 2.0, 300.0, 900.0, 6.5, 1.0, 0.0, 1.0, 8.0, 16.0},
};

// The classes of vector instruction the model prices apart (OnVector names the class).
enum class VecClass { kElementwise, kReduce, kCast };

struct ModelField {
    const char *name;
    double ModelConstants::*member;
    const char *source;
};
// ADD = asc-devkit examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance
// (README: an 8192 x 8192 half Add on 48 cores of an Atlas A2 at 1.85 GHz, profiled per case).
inline constexpr ModelField kModelFields[] = {
    {"vector_cycles_per_repeat", &ModelConstants::vector_cycles_per_repeat,
     "measured: ADD case 6, 86 Adds of 127 repeats per core in 6.954 us = 149.6 cycles each, i.e. one repeat "
     "per cycle plus the issue cost below (the README's 128 halves per cycle)"},
    {"vector_issue_cycles", &ModelConstants::vector_issue_cycles,
     "measured: ADD case 6, 149.6 cycles per 127-repeat Add less its 127 repeats (no bank conflicts there)"},
    {"reduce_issue_factor", &ModelConstants::reduce_issue_factor,
     "range: the guide's 'select low-latency instructions' page puts reduction instructions at 2-5x the latency "
     "of an Add; the issue cost of a reduction is this multiple of vector_issue_cycles (3.5: the middle)"},
    {"cast_repeat_factor", &ModelConstants::cast_repeat_factor,
     "assumption: a Cast repeat costs this many element-wise repeats (no public per-instruction figure found)"},
    {"copy_issue_cycles", &ModelConstants::copy_issue_cycles,
     "measured: ADD cases 2 and 3 (serial 8 KB and 32 KB GM->UB copies, 583.7 and 1994.6 cycles each) fit "
     "113 cycles per copy plus 17.4 bytes per cycle; with it a copy reaches 90 % of its rate at 16 KB, as the "
     "guide's 'move large blocks at once' page says"},
    {"gm_burst_bytes", &ModelConstants::gm_burst_bytes,
     "guide: the 2201 hardware constraints split GM transfers into 128/256/512-byte bursts rounded up when "
     "unaligned, and the '512B-aligned GM addresses' page measures 32-byte-aligned copies at down to 70 % of "
     "512-byte-aligned ones; the link moves each block's span rounded out to this many bytes"},
    {"scalar_issue_cycles", &ModelConstants::scalar_issue_cycles,
     "assumption: scalar-unit cycles to issue one instruction (address and parameter set-up)"},
    {"scalar_gm_cycles", &ModelConstants::scalar_gm_cycles,
     "assumption: round trip of one GlobalTensor::GetValue/SetValue, cycles"},
    {"sync_all_cycles", &ModelConstants::sync_all_cycles,
     "assumption: hardware SyncAll release after the last core arrived, cycles"},
    {"launch_us", &ModelConstants::launch_us,
     "range: ADD cases 2-6, Task Duration less aiv_time = 9.44, 7.00, 6.46, 2.53, 6.03 us (scheduling and "
     "completion around the cores' work); 6.5 is their median, microseconds"},
    {"l2_reuse_fraction", &ModelConstants::l2_reuse_fraction,
     "assumption: a re-read hits L2 while the traffic since its last touch fits this fraction "
     "of L2"},
    {"hbm_phase_overlap", &ModelConstants::hbm_phase_overlap,
     "assumption, fitted to ADD: how independent the cores' phases are; a core draws the HBM pool over "
     "1 + (cores - 1) x (1 - o + o x d) cores, d its own share of time with HBM bytes in flight. 0 (cores in step) "
     "fits ADD cases 2, 3 and 5 with one pool of 1.55 TB/s; 1 would need 1.25 and 1.46 TB/s in cases 2 and 3 "
     "against 1.55 in case 5"},
    {"write_hbm_fraction", &ModelConstants::write_hbm_fraction,
     "assumption, fitted to ADD: the share of written bytes the HBM pool is charged for while the kernel runs "
     "(the rest lands in L2). 1 fits ADD case 4 (no L2 hint, as both kernels here: 384 MB of reads and writes in "
     "250.5 us of MTE2 = 1.53 TB/s); case 5, its reads bypassing L2, shows writes landing in L2 (0)"},
    {"pipe_barrier_cycles", &ModelConstants::pipe_barrier_cycles,
     "assumption: a PipeBarrier on one pipe holds that pipe's next instruction this many cycles past its last "
     "one's end (the drain the barrier waits for; no public figure)"},
    {"flag_sync_cycles", &ModelConstants::flag_sync_cycles,
     "assumption: a cross-pipe handover (SetFlag -> WaitFlag, EnQue -> DeQue, FreeTensor -> AllocTensor) "
     "releases the waiting pipe this many cycles after the producer's work (no public figure)"},
};

inline const ModelConstants &FindModel(const char *soc)
{
    for (const ModelConstants &m : kModelTable) {
        if (std::strcmp(m.soc, soc) == 0) {
            return m;
        }
    }
    return kModelTable[0];  // every SoC of platform.h has a row (a test checks it)
}

// `base` with its fields replaced by `values`, in kModelFields order (bench --sensitivity).
inline ModelConstants WithValues(const ModelConstants &base, const double *values)
{
    ModelConstants m = base;
    for (size_t i = 0; i < std::size(kModelFields); ++i) {
        m.*kModelFields[i].member = values[i];
    }
    return m;
}

// Pipe indices in twin::Pipe order (core.h checks that they agree).
namespace tl {
inline constexpr int S = 0, V = 1, MTE2 = 2, MTE3 = 3, kPipes = 4;
}

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

// What the cores of one launch share: the L2 model and the SyncAll rendezvous times.
class LaunchTimeline {
public:
    void Init(const SocInfo &soc, const ModelConstants &constants)
    {
        model = constants;
        const double hbm_bytes_per_cycle = soc.hbm_gbps / soc.clock_ghz;
        l2.Init(double(soc.l2_bytes) * model.l2_reuse_fraction / hbm_bytes_per_cycle);
        sync_max_.clear();
    }
    // SyncAll number `gen` of a core that drained its pipes at cycle t; Leave is called after the
    // launch barrier, so every core's Arrive for `gen` happened before.
    void Arrive(uint64_t gen, double t)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (sync_max_.size() <= gen) {
            sync_max_.resize(gen + 1, 0.0);
        }
        sync_max_[gen] = std::max(sync_max_[gen], t);
    }
    double Leave(uint64_t gen)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return sync_max_[gen];
    }

    L2Model l2;
    ModelConstants model{};  // this launch's constants: the SoC's row of kModelTable unless overridden

private:
    std::mutex mutex_;
    std::vector<double> sync_max_;
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

// The pipes of one core. Pipes run concurrently; each runs its instructions in program order. The
// scalar unit (S) issues every instruction in program order, so nothing starts before its issue.
class CoreTimeline {
public:
    CoreTimeline(const SocInfo &soc, uint32_t block_num) : m_(&FindModel(soc.name))
    {
        pool_ = soc.hbm_gbps / soc.clock_ghz;
        cores_ = std::max<uint32_t>(block_num, 1);
        link_[tl::MTE2] = soc.ddr_bytes_per_cycle;
        link_[tl::MTE3] = soc.ub_to_ddr_bytes_per_cycle;
        l2_rate_ = soc.l2_bytes_per_cycle;
    }
    void Attach(LaunchTimeline *launch)
    {
        launch_ = launch;
        m_ = &launch->model;
    }

    // A GM copy on MTE2 (read) or MTE3 (write): `blocks` blocks of bytes / blocks, `pitch` apart in GM.
    // Its set-up (copy_issue_cycles) runs from when the copy may go, so it hides behind the copy
    // before it on the pipe when the kernel queued it early (ADD's double-buffered cases show no
    // set-up, its serial ones the full one).
    L2Model::Split Copy(int pipe, uint64_t bytes, const void *gm, uint32_t blocks, uint64_t pitch)
    {
        const double issued = Issue(), start = std::max(free_[pipe], issued);
        const double ready = std::max(start, std::max(issued, released_[pipe]) + m_->copy_issue_cycles);
        L2Model::Split split{bytes, 0};
        if (gm != nullptr && launch_ != nullptr && blocks > 0) {
            split = launch_->l2.Touch(gm, blocks, bytes / blocks, pitch, start, pipe == tl::MTE3);
        }
        // The link moves whole bursts: a block's unaligned ends cost it a burst each. HBM's share
        // is charged the bytes only (a neighbouring block's burst brings the rest along).
        const double bursts = gm != nullptr && bytes > 0 ? BurstBytes(gm, blocks, bytes / blocks, pitch) / double(bytes) : 1.0;
        const double charged = double(split.hbm) * (pipe == tl::MTE3 ? m_->write_hbm_fraction : 1.0);
        const double share = HbmShare(ready);
        const double link_time = std::max(charged / share, double(split.hbm) * bursts / link_[pipe]);
        const double l2_time = double(split.l2) * bursts / l2_rate_;
        double end = ready + link_time;
        if (charged > 0) {
            channel_.Forget(std::min(free_[tl::MTE2], free_[tl::MTE3]));
            end = std::max(end, channel_.Place(ready, charged / share));
            in_flight_ += end - ready;
        }
        end += l2_time;
        free_[pipe] = end;
        busy_[pipe] += ready - start + link_time + l2_time;
        return split;
    }
    // A vector instruction of `repeats` repeats: its issue, then one repeat after the other.
    void Vector(uint64_t repeats, VecClass cls)
    {
        const double issue = m_->vector_issue_cycles * (cls == VecClass::kReduce ? m_->reduce_issue_factor : 1.0);
        const double per_repeat = m_->vector_cycles_per_repeat * (cls == VecClass::kCast ? m_->cast_repeat_factor : 1.0);
        const double start = Start(tl::V);
        Finish(tl::V, start, start + issue + double(repeats) * per_repeat);
    }
    // A scalar GM access: the scalar unit waits for the round trip.
    void ScalarGm()
    {
        Issue();
        free_[tl::S] += m_->scalar_gm_cycles;
        busy_[tl::S] += m_->scalar_gm_cycles;
    }

    // Queue buffers hand over between a producer and a consumer pipe (for VECIN: MTE2 then V). The
    // hardware hands out a queue's `buffers` in turn (that is what makes InitBuffer(que, 2, len)
    // double buffering), so the n-th AllocTensor waits for the FreeTensor of the (n - buffers)-th.
    void Alloc(const void *queue, const void *buffer, uint32_t buffers, int producer)
    {
        QueueRing &q = queues_[queue];
        if (q.freed.size() != buffers) {
            q.freed.assign(std::max<uint32_t>(buffers, 1), 0.0);
            q.next = 0;
        }
        SlotTimes &slot = slots_[buffer];
        slot.ring = &q;
        slot.turn = q.next++ % q.freed.size();
        Wait(producer, q.freed[slot.turn]);
    }
    void EnQue(const void *buffer, int producer) { slots_[buffer].ready = SetTime(producer); }
    void DeQue(const void *buffer, int consumer) { Wait(consumer, slots_[buffer].ready + m_->flag_sync_cycles); }
    void Free(const void *buffer, int consumer)
    {
        SlotTimes &slot = slots_[buffer];
        const double t = SetTime(consumer) + m_->flag_sync_cycles;
        if (slot.ring != nullptr) {
            slot.ring->freed[slot.turn] = t;
        }
    }

    void SetFlag(int from, int to, int id) { flags_[from][to][id & 7].push_back(SetTime(from)); }
    void WaitFlag(int from, int to, int id)
    {
        std::deque<double> &q = flags_[from][to][id & 7];
        const double t = q.empty() ? 0.0 : q.front();
        if (!q.empty()) {
            q.pop_front();
        }
        Wait(to, t + m_->flag_sync_cycles);
    }
    // A SetFlag at once followed by its WaitFlag (the pair --cce-auto-sync inserts): the same two steps.
    void FlagPair(int from, int to) { Wait(to, SetTime(from) + m_->flag_sync_cycles); }
    // PipeBarrier on one pipe: the pipe runs in order anyway; its next instruction waits for the drain.
    void PipeBarrier(int pipe)
    {
        Issue();
        free_[pipe] += m_->pipe_barrier_cycles;
    }
    // PipeBarrier<PIPE_ALL>: everything issued so far is done before anything after it starts.
    void BarrierAll()
    {
        Issue();
        std::fill(free_, free_ + tl::kPipes, End());
        std::copy(free_, free_ + tl::kPipes, released_);
    }
    // SyncAll: drain, then wait for the slowest core (Arrive before the launch barrier, Leave after).
    void SyncArrive()
    {
        BarrierAll();
        if (launch_ != nullptr) {
            launch_->Arrive(sync_gen_, End());
        }
    }
    void SyncLeave()
    {
        const double t = (launch_ != nullptr ? launch_->Leave(sync_gen_) : End()) + m_->sync_all_cycles;
        sync_gen_++;
        std::fill(free_, free_ + tl::kPipes, t);
        std::copy(free_, free_ + tl::kPipes, released_);
    }

    double End() const { return *std::max_element(free_, free_ + tl::kPipes); }
    double Busy(int pipe) const { return busy_[pipe]; }
    double ChannelBusy() const { return channel_.Busy(); }

private:
    struct QueueRing {
        std::vector<double> freed;  // per buffer turn: when its last FreeTensor let it go
        uint64_t next = 0;
    };
    struct SlotTimes {
        double ready = 0;           // EnQue: the producer finished filling it
        QueueRing *ring = nullptr;  // the queue and turn of its current AllocTensor
        size_t turn = 0;
    };

    // This core's HBM rate from the pool at cycle t: the pool over the cores drawing on it with this one
    // (hbm_phase_overlap), d being this core's share of the time so far with HBM bytes in flight. With
    // the others drawing for the same share of time, the cores together never exceed the pool.
    double HbmShare(double t) const
    {
        const double o = m_->hbm_phase_overlap;
        const double d = t > 0 ? std::min(1.0, in_flight_ / t) : 1.0;
        return pool_ / (1.0 + double(cores_ - 1) * (1.0 - o + o * d));
    }

    double Issue()
    {
        const double at = free_[tl::S];
        free_[tl::S] += m_->scalar_issue_cycles;
        busy_[tl::S] += m_->scalar_issue_cycles;
        return at;
    }
    double Start(int pipe) { return std::max(free_[pipe], Issue()); }
    void Finish(int pipe, double start, double end)
    {
        free_[pipe] = end;
        busy_[pipe] += end - start;
    }
    // A flag set on `pipe` is set once everything issued to it before has finished.
    double SetTime(int pipe)
    {
        const double issued = Issue();
        return std::max(free_[pipe], issued);
    }
    // A wait on `pipe`: its next instruction starts no earlier than t (when the waiting pipe is S,
    // the scalar unit itself stalls, and with it the issue of everything after).
    void Wait(int pipe, double t)
    {
        const double issued = Issue();
        free_[pipe] = std::max({free_[pipe], issued, t});
        released_[pipe] = std::max(released_[pipe], t);
    }

    // The bytes of `blocks` blocks of `len` bytes, `pitch` apart from `gm` on, rounded out to whole
    // bursts block by block (contiguous blocks are one range).
    double BurstBytes(const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch) const
    {
        const uint64_t burst = std::max<uint64_t>(uint64_t(m_->gm_burst_bytes), 1);
        const uint64_t base = reinterpret_cast<uintptr_t>(gm);
        auto span = [&](uint64_t lo, uint64_t hi) { return (hi + burst - 1) / burst * burst - lo / burst * burst; };
        if (pitch == len || blocks <= 1) {
            return double(span(base, base + uint64_t(blocks) * len));
        }
        uint64_t total = 0;
        for (uint32_t i = 0; i < blocks; ++i) {
            total += span(base + i * pitch, base + i * pitch + len);
        }
        return double(total);
    }

    const ModelConstants *m_;
    LaunchTimeline *launch_ = nullptr;
    double pool_ = 1, l2_rate_ = 1;
    double in_flight_ = 0;  // cycles with HBM bytes of this core in flight (summed over copies)
    uint32_t cores_ = 1;
    double link_[tl::kPipes] = {1, 1, 1, 1};
    double free_[tl::kPipes] = {};  // when each pipe finishes its last instruction; S: the issue point
    double released_[tl::kPipes] = {};  // the latest time a wait or barrier let each pipe go on
    double busy_[tl::kPipes] = {};
    HbmChannel channel_;
    uint64_t sync_gen_ = 0;
    std::unordered_map<const void *, QueueRing> queues_;  // nodes are stable: SlotTimes points at them
    std::unordered_map<const void *, SlotTimes> slots_;
    std::deque<double> flags_[tl::kPipes][tl::kPipes][8];
};

}  // namespace twin
