// SPDX-License-Identifier: BSD-3-Clause
// The performance timeline of the twin. Every instruction of a core is placed on its pipe (S issues,
// V computes, MTE2 copies GM -> UB, MTE3 copies UB -> GM) at the earliest time the kernel's own
// synchronisation allows (EnQue -> DeQue, FreeTensor -> the next AllocTensor of that buffer,
// SetFlag -> WaitFlag, PipeBarrier<PIPE_ALL>, SyncAll across cores) and given a modelled duration.
// A core's makespan is when its last pipe finishes; the busiest core's makespan plus the launch cost
// is the modelled kernel time (the Python side adds the launch cost and reports).
//
// Memory (the HBM pool and L2) is modelled in timeline_memory.h; the model's constants and their
// sources are in model_constants.h, the SoC facts in platform.h.
// Recording costs O(1) per instruction plus O(bytes / 512) for the L2 bookkeeping of a copy.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "model_constants.h"
#include "platform.h"
#include "timeline_memory.h"

namespace twin {

// The classes of vector instruction the model prices apart (OnVector names the class).
enum class VecClass { kElementwise, kReduce, kCast };

// Pipe indices in twin::Pipe order (core.h checks that they agree).
namespace tl {
inline constexpr int S = 0, V = 1, MTE2 = 2, MTE3 = 3, kPipes = 4;
}

// What the cores of one launch share: the L2 model, the SyncAll rendezvous times, the times GM
// flags were written, and the arbiter that orders the cores' L2 accesses.
//
// The arbiter makes the model independent of how the OS runs the core threads: a core applies an
// access to L2 at cycle t only when no other core can still make one before it, ordered by (cycle,
// core id). Each core publishes a bound, a cycle none of its future accesses will precede (its
// scalar issue point, which every later instruction starts at or after; the access's own cycle
// while it waits). A core in SyncAll has no bound until all arrived (then the release time); one
// waiting for a GM flag has none except from a flag write to its next look (then that write's time,
// as the wait is priced from it); one that returned has none. So the accesses are applied in one
// order whatever the threads do, and a case gives the same cycles alone, among others, under load,
// in any process.
class LaunchTimeline {
public:
    static constexpr double kNever = 1e300;

    void Init(const SocInfo &soc, const ModelConstants &constants, uint32_t cores)
    {
        model = constants;
        l2.Init(uint64_t(double(soc.l2_bytes) * model.l2_capacity_fraction));
        sync_max_.clear();
        arrived_.clear();
        flag_time_.clear();
        bound_.assign(cores, 0.0);
        waiting_.assign(cores, 0);
        flag_wait_.assign(cores, -1.0);
        wake_.clear();
        for (uint32_t c = 0; c < cores; ++c) {
            wake_.emplace_back(std::make_unique<std::condition_variable>());
        }
    }

    // Runs `touch` (an L2 access of core `core` at cycle t) in the arbiter's order; `after` is the
    // core's bound once it returns.
    template <class Touch>
    L2Model::Split Access(uint32_t core, double t, double after, Touch touch)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        bound_[core] = t;
        waiting_[core] = 1;
        WakeFirst();
        wake_[core]->wait(lock, [&] { return First(core); });
        waiting_[core] = 0;
        const L2Model::Split split = touch();
        bound_[core] = after;
        WakeFirst();
        return split;
    }
    // The core's scalar issue point rose to t without an L2 access (scalar GM accesses: a core
    // polling GM through them lets the others go on).
    void Advance(uint32_t core, double t)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        bound_[core] = std::max(bound_[core], t);
        WakeFirst();
    }
    // The core returned (or failed): it accesses L2 no more.
    void Done(uint32_t core)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        bound_[core] = kNever;
        WakeFirst();
    }

    // SyncAll number `gen` of a core that drained its pipes at cycle t; Leave is called after the
    // launch barrier, so every core's Arrive for `gen` happened before. The last to arrive sets
    // every core's bound to the release time.
    void Arrive(uint32_t core, uint64_t gen, double t)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (sync_max_.size() <= gen) {
            sync_max_.resize(gen + 1, 0.0);
            arrived_.resize(gen + 1, 0);
        }
        sync_max_[gen] = std::max(sync_max_[gen], t);
        bound_[core] = kNever;
        if (++arrived_[gen] == bound_.size()) {
            std::fill(bound_.begin(), bound_.end(), sync_max_[gen] + model.sync_all_cycles);
        }
        WakeFirst();
    }
    double Leave(uint64_t gen)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return sync_max_[gen] + model.sync_all_cycles;
    }

    // GM flags (IBSet / IBWait, WaitPreBlock / NotifyNextBlock). A core polls with `ready` (which
    // reads the flags; true when the wait is over) under the arbiter's lock, so no flag write falls
    // between its look and its parking. A waiting core has no bound, except from a flag write at t
    // to its next look: max(its own issue point `own`, t), as that write may end the wait. A look
    // that fails takes the bound away again (only a later write can end the wait, and it brings its
    // own), so a waiting core never holds back the accesses of the core that is to write its flag.
    // A writer writes with `write` under the same lock.
    template <class Ready>
    bool FlagPoll(uint32_t core, double own, Ready ready)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (ready()) {
            flag_wait_[core] = -1.0;
            return true;
        }
        if (flag_wait_[core] < 0) {
            flag_wait_[core] = own;
        }
        bound_[core] = kNever;
        WakeFirst();
        return false;
    }
    template <class Write>
    void FlagWrite(const void *slot, double t, Write write)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        flag_time_[slot] = t;
        for (uint32_t c = 0; c < bound_.size(); ++c) {
            if (flag_wait_[c] >= 0) {
                bound_[c] = std::min(bound_[c], std::max(flag_wait_[c], t));
            }
        }
        write();
        WakeFirst();
    }
    // When the flag at `slot` was last written (0: never in this launch).
    double FlagTime(const void *slot)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = flag_time_.find(slot);
        return it == flag_time_.end() ? 0.0 : it->second;
    }

    L2Model l2;
    ModelConstants model{};  // this launch's constants: the SoC's row of kModelTable unless overridden

private:
    // Whether the waiting core goes first: every other core's bound lies after (t, core).
    bool First(uint32_t core) const
    {
        const double t = bound_[core];
        for (uint32_t c = 0; c < bound_.size(); ++c) {
            if (c != core && (bound_[c] < t || (bound_[c] == t && c < core))) {
                return false;
            }
        }
        return true;
    }
    // Wakes the core with the least (bound, id) when it waits to access L2.
    void WakeFirst()
    {
        uint32_t first = 0;
        for (uint32_t c = 1; c < bound_.size(); ++c) {
            if (bound_[c] < bound_[first]) {
                first = c;
            }
        }
        if (!bound_.empty() && waiting_[first]) {
            wake_[first]->notify_one();
        }
    }

    std::mutex mutex_;
    std::vector<double> sync_max_;
    std::vector<uint32_t> arrived_;
    std::vector<double> bound_;
    std::vector<uint8_t> waiting_;
    std::vector<std::unique_ptr<std::condition_variable>> wake_;
    std::vector<double> flag_wait_;  // per core: its issue point when it began waiting for a flag, else -1
    std::unordered_map<const void *, double> flag_time_;
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
    void Attach(LaunchTimeline *launch, uint32_t core)
    {
        launch_ = launch;
        core_ = core;
        m_ = &launch->model;
    }

    // A GM copy on MTE2 (read) or MTE3 (write): `blocks` blocks of bytes / blocks, `pitch` apart in GM;
    // `gm` null: the copy bypasses L2. Its set-up (copy_issue_cycles) runs from when the copy may go,
    // so it hides behind the copy before it on the pipe when the kernel queued it early (ADD's
    // double-buffered cases show no set-up, its serial ones the full one). The link moves the
    // bytes read from HBM and every byte written (into L2 or HBM); bytes read from L2 come at the L2
    // rate; HBM is charged the read misses, the bypassing writes and the write-backs the copy causes.
    L2Model::Split Copy(int pipe, uint64_t bytes, const void *gm, uint32_t blocks, uint64_t pitch)
    {
        const double issued = Issue(), start = std::max(free_[pipe], issued);
        const double ready = std::max(start, std::max(issued, released_[pipe]) + m_->copy_issue_cycles);
        const bool write = pipe == tl::MTE3;
        L2Model::Split split{bytes, 0, 0};
        if (gm != nullptr && launch_ != nullptr && blocks > 0) {
            split = launch_->Access(core_, start, free_[tl::S],
                                    [&] { return launch_->l2.Touch(gm, blocks, bytes / blocks, pitch, write); });
        }
        // The link moves whole bursts: a block's unaligned ends cost it a burst each. HBM's share
        // is charged the bytes only (a neighbouring block's burst brings the rest along).
        const double bursts = gm != nullptr && bytes > 0 ? BurstBytes(gm, blocks, bytes / blocks, pitch) / double(bytes) : 1.0;
        const double charged = double(split.hbm + split.written_back);
        const double moved = write ? double(bytes) : double(split.hbm);
        const double share = HbmShare(ready);
        const double link_time = std::max(charged / share, moved * bursts / link_[pipe]);
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
        if (launch_ != nullptr) {
            launch_->Advance(core_, free_[tl::S]);
        }
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
            launch_->Arrive(core_, sync_gen_, End());
        }
    }
    void SyncLeave()
    {
        const double t = launch_ != nullptr ? launch_->Leave(sync_gen_) : End() + m_->sync_all_cycles;
        sync_gen_++;
        WaitAll(t);
    }
    // A GM flag wait that ended: the core saw the flag written at cycle `written` a scalar GM round
    // trip later, and nothing of it starts before.
    void FlagSeen(double written) { WaitAll(std::max(End(), written + m_->scalar_gm_cycles)); }
    double IssuePoint() const { return free_[tl::S]; }
    uint32_t CoreId() const { return core_; }

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
    void WaitAll(double t)
    {
        std::fill(free_, free_ + tl::kPipes, t);
        std::copy(free_, free_ + tl::kPipes, released_);
    }
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
    uint32_t core_ = 0;
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
