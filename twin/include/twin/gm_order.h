// The order of GM accesses across cores. Between two SyncAlls the cores of a launch run unordered, so
// a GM byte that one core writes may be read or written by another core only after a SyncAll both
// have passed; atomic adds (SetAtomicAdd) may overlap each other, but their sum is still visible to
// another core only after a SyncAll. Each core logs the GM ranges its copies and scalar accesses touch,
// per SyncAll interval; the launcher checks the rule once every core has returned, so the verdict
// never depends on how the threads happened to interleave. Within one core, the pipes that touch GM
// (MTE2 reads, MTE3 writes and atomic adds, the scalar unit's GetValue/SetValue) run concurrently
// too: GmPipeLog keeps what the same-core rule of sync.h (TouchGm) needs.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace twin {

enum class GmAccess { kRead = 0, kWrite = 1, kAtomicAdd = 2 };
inline constexpr int kGmAccessKinds = 3;

// One core's GM ranges: per SyncAll interval and access kind, disjoint [lo, hi) ranges (touching or
// overlapping accesses merge), each with the call that first touched it.
class GmAccessLog {
public:
    struct Range {
        uint64_t hi;
        const char *call;
    };
    using Ranges = std::map<uint64_t, Range>;  // lo -> range

    // `blocks` blocks of `len` bytes, `pitch` bytes apart from `gm` on.
    GmAccessLog() : intervals_(1) {}

    void Record(const char *call, const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, GmAccess kind)
    {
        Ranges &ranges = intervals_.back()[int(kind)];
        const uint64_t base = reinterpret_cast<uintptr_t>(gm);
        if (pitch == len) {  // contiguous blocks: one range
            Add(ranges, base, base + uint64_t(blocks) * len, call);
            return;
        }
        for (uint32_t i = 0; i < blocks; ++i) {
            Add(ranges, base + i * pitch, base + i * pitch + len, call);
        }
    }
    // A SyncAll: what follows is ordered after everything before it on every core.
    void NextInterval() { intervals_.emplace_back(); }

    size_t Intervals() const { return intervals_.size(); }
    const Ranges &Of(size_t interval, GmAccess kind) const
    {
        static const Ranges kNone;
        return interval < intervals_.size() ? intervals_[interval][int(kind)] : kNone;
    }

private:
    static void Add(Ranges &ranges, uint64_t lo, uint64_t hi, const char *call)
    {
        auto it = ranges.upper_bound(lo);
        if (it != ranges.begin() && std::prev(it)->second.hi >= lo) {
            --it;
            lo = it->first;
            call = it->second.call;
        }
        while (it != ranges.end() && it->first <= hi) {
            hi = std::max(hi, it->second.hi);
            it = ranges.erase(it);
        }
        ranges.emplace(lo, Range{hi, call});
    }

    std::vector<std::array<Ranges, kGmAccessKinds>> intervals_;
};

// One core's GM bytes as its own pipes used them, for the order of the pipes of one core (the rule is
// TouchGm in sync.h): per disjoint byte range, the last write (pipe, instruction seq, call, atomic or
// not) and each pipe's last read since that write. A PipeBarrier<PIPE_ALL> or SyncAll orders all of
// it, so the log starts afresh there.
class GmPipeLog {
public:
    static constexpr int kPipes = 4;  // twin::Pipe: S, V, MTE2, MTE3
    struct Use {
        uint64_t hi = 0;
        int writer = -1;  // -1: not written since the log started
        bool atomic = false;
        uint64_t write_seq = 0;
        const char *write_call = nullptr;
        uint64_t read_seq[kPipes] = {};  // 0: not read by that pipe since the write
    };

    // Bytes [lo, hi) accessed by `pipe` at instruction `seq`: `check(use)` sees every part already
    // in the log first (it throws on a hazard), then the log records the access.
    template <typename Check>
    void Access(uint64_t lo, uint64_t hi, int pipe, bool write, bool atomic, uint64_t seq, const char *call,
                const Check &check)
    {
        Split(lo);
        Split(hi);
        for (auto it = uses_.lower_bound(lo); it != uses_.end() && it->first < hi; ++it) {
            check(it->first, it->second);
        }
        for (uint64_t at = lo; at < hi;) {
            auto it = uses_.lower_bound(at);
            if (it == uses_.end() || it->first > at) {  // a gap: bytes the log has not seen yet
                const uint64_t end = it == uses_.end() ? hi : std::min(hi, it->first);
                it = uses_.emplace(at, Use{}).first;
                it->second.hi = end;
            }
            Use &u = it->second;
            if (write) {
                u = Use{u.hi, pipe, atomic, seq, call, {}};
            } else {
                u.read_seq[pipe] = seq;
            }
            at = u.hi;
        }
    }
    void Clear() { uses_.clear(); }

private:
    // The range holding byte `at` is cut in two there (no-op at a range boundary or in a gap).
    void Split(uint64_t at)
    {
        auto it = uses_.upper_bound(at);
        if (it == uses_.begin()) return;
        --it;
        if (it->first < at && at < it->second.hi) {
            Use upper = it->second;
            it->second.hi = at;
            uses_.emplace(at, upper);
        }
    }

    std::map<uint64_t, Use> uses_;  // lo -> use of [lo, hi)
};

// The first place where one core's access meets another core's write in the same SyncAll interval:
// "" when the launch kept the rule, else the rule error. `where(address)` names a GM address for the
// message (buffer and byte offset).
inline std::string CheckGmOrder(const std::vector<GmAccessLog> &logs,
                                const std::function<std::string(uint64_t)> &where)
{
    size_t intervals = 0;
    for (const GmAccessLog &log : logs) intervals = std::max(intervals, log.Intervals());
    // (access of core b, write of core a): a read or a plain write meets any write; an atomic add
    // meets a plain write only.
    struct Pair {
        GmAccess access, write;
        const char *verb;
    };
    static constexpr Pair kPairs[] = {
        {GmAccess::kRead, GmAccess::kWrite, "reads"},          {GmAccess::kRead, GmAccess::kAtomicAdd, "reads"},
        {GmAccess::kWrite, GmAccess::kWrite, "writes"},        {GmAccess::kWrite, GmAccess::kAtomicAdd, "writes"},
        {GmAccess::kAtomicAdd, GmAccess::kWrite, "atomically adds to"},
    };
    for (size_t e = 0; e < intervals; ++e) {
        for (size_t b = 0; b < logs.size(); ++b) {
            for (size_t a = 0; a < logs.size(); ++a) {
                if (a == b) continue;
                for (const Pair &p : kPairs) {
                    const GmAccessLog::Ranges &mine = logs[b].Of(e, p.access), &theirs = logs[a].Of(e, p.write);
                    auto x = mine.begin(), y = theirs.begin();
                    while (x != mine.end() && y != theirs.end()) {  // both sorted and disjoint: one sweep
                        const uint64_t lo = std::max(x->first, y->first), hi = std::min(x->second.hi, y->second.hi);
                        if (lo < hi) {
                            return "core " + std::to_string(b) + ": " + x->second.call + ": " + p.verb + " GM bytes that core " +
                                   std::to_string(a) + " " + (p.write == GmAccess::kWrite ? "wrote" : "atomically added to") +
                                   " (" + y->second.call + ") with no SyncAll in between; another core's GM writes are "
                                   "ordered only by a SyncAll (" + std::to_string(hi - lo) + " bytes from " + where(lo) +
                                   ", SyncAll interval " + std::to_string(e) + ")";
                        }
                        (x->second.hi <= y->second.hi) ? ++x : ++y;
                    }
                }
            }
        }
    }
    return "";
}

}  // namespace twin
