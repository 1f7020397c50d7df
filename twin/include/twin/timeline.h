// SPDX-License-Identifier: BSD-3-Clause
// The performance timeline of the twin. Every instruction of a core is placed on its pipe (S issues,
// V computes, MTE2 copies GM -> UB, MTE3 copies UB -> GM) at the earliest time the kernel's own
// synchronisation allows (EnQue -> DeQue, FreeTensor -> the next AllocTensor of that buffer,
// SetFlag -> WaitFlag, PipeBarrier<PIPE_ALL>, SyncAll across cores) and given a modelled duration.
// A core's makespan is when its last pipe finishes; the busiest core's makespan plus the launch cost
// is the modelled kernel time (the Python side adds the launch cost and reports).
//
// What the cores of a launch share (L2, SyncAll, GM flags, the arbiter) is in timeline_launch.h;
// memory (the HBM pool and L2) is modelled in timeline_memory.h; the model's constants and their
// sources are in model_constants.h, the SoC facts in platform.h.
// Recording costs O(1) per instruction plus O(bytes / 512) for the L2 bookkeeping of a copy.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "model_constants.h"
#include "platform.h"
#include "timeline_launch.h"

namespace twin {

// The classes of vector instruction the model prices apart (OnVector names the class).
enum class VecClass { kElementwise, kReduce, kCast };

// Pipe indices in twin::Pipe order (core.h checks that they agree).
namespace tl {
inline constexpr int S = 0, V = 1, MTE2 = 2, MTE3 = 3, kPipes = 4;
}

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
