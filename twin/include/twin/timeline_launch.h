// SPDX-License-Identifier: BSD-3-Clause
// The part of the performance timeline (timeline.h) the cores of one launch share.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "model_constants.h"
#include "platform.h"
#include "timeline_memory.h"

namespace twin {

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

}  // namespace twin
