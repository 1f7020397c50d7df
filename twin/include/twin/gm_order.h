// SPDX-License-Identifier: BSD-3-Clause
// The order of GM accesses across cores. The cores of a launch run unordered, so a GM byte that one
// core writes may be read or written by another core only once the write happens before that access:
// through a SyncAll both have passed, or through a flag (the writer's DataSyncBarrier and then a
// WriteGmByPassDCache of the flag, the reader's ReadGmByPassDCache that returns the flag's value).
// Atomic adds (SetAtomicAdd) may overlap each other, plain writes of identical bytes may overlap
// each other (every order leaves the same bytes; twin/RULES.md), and flag accesses (the bypass calls'
// flags, the slots of IBSet/IBWait and WaitPreBlock/NotifyNextBlock) may meet each other, as the
// synchronising accesses they are; everything else needs the order. Each core logs the GM ranges
// its copies and scalar accesses touch, per segment: a stretch of its program between two ordering
// points, with a vector clock saying which segments of the other cores happen before it. The
// launcher checks the rule once every core has returned, so the verdict depends only on what each
// reader observed, never on how the threads happened to interleave otherwise. Within one core, the
// pipes that touch GM (MTE2 reads, MTE3 writes and atomic adds, the scalar unit's GetValue/SetValue)
// run concurrently too: GmPipeLog keeps what the same-core rule of sync.h (TouchGm) needs.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace twin {

// kFlagRead: ReadGmByPassDCache or a flag slot polled (block_sync.h); kFlagWrite: WriteGmByPassDCache
// after a DataSyncBarrier, or a flag slot set (a release). The atomic kinds: copies to GM under
// SetAtomicAdd / SetAtomicMax / SetAtomicMin.
enum class GmAccess { kRead, kWrite, kAtomicAdd, kAtomicMax, kAtomicMin, kFlagRead, kFlagWrite };
inline constexpr int kGmAccessKinds = 7;

inline bool IsAtomic(GmAccess k) { return k == GmAccess::kAtomicAdd || k == GmAccess::kAtomicMax || k == GmAccess::kAtomicMin; }
inline bool IsRead(GmAccess k) { return k == GmAccess::kRead || k == GmAccess::kFlagRead; }
inline bool IsFlag(GmAccess k) { return k == GmAccess::kFlagRead || k == GmAccess::kFlagWrite; }

// True when `access` of one core and `write` of another (a kind that changes GM) must be ordered:
// atomics of one operation may overlap each other, flag accesses may meet each other.
inline bool NeedsOrder(GmAccess access, GmAccess write)
{
    if (IsRead(write)) return false;
    if (IsAtomic(access) && access == write) return false;
    return !(IsFlag(access) && IsFlag(write));
}

inline const char *AccessVerb(GmAccess k, bool past)
{
    switch (k) {
    case GmAccess::kAtomicAdd: return past ? "atomically added to" : "atomically adds to";
    case GmAccess::kAtomicMax: return past ? "atomically took the max into" : "atomically takes the max into";
    case GmAccess::kAtomicMin: return past ? "atomically took the min into" : "atomically takes the min into";
    case GmAccess::kRead:
    case GmAccess::kFlagRead: return past ? "read" : "reads";
    default: return past ? "wrote" : "writes";
    }
}

// A vector clock: entry c is the newest segment of core c ordered before (1-based; 0: none).
using GmClock = std::vector<uint64_t>;

// One core's GM ranges: per segment and access kind, disjoint [lo, hi) ranges (touching or
// overlapping accesses merge), each with the call that first touched it; and the bytes of its
// plain writes, so that overlapping writes of identical bytes can be told from a race.
class GmAccessLog {
public:
    struct Range {
        uint64_t hi;
        const char *call;
    };
    using Ranges = std::map<uint64_t, Range>;  // lo -> range
    struct Bytes {  // GM bytes [lo, lo + len) held the written bytes at `at` in the segment's arena
        uint64_t lo, len, at;
    };
    struct Segment {
        size_t interval;  // SyncAlls passed before it
        GmClock clock;    // clock[own core] is this segment's number
        std::array<Ranges, kGmAccessKinds> ranges;
        std::vector<Bytes> written;
        std::string arena;
    };

    GmAccessLog() : GmAccessLog(0, 1) {}
    GmAccessLog(uint32_t core, uint32_t cores) : core_(core)
    {
        segments_.push_back(Segment{0, GmClock(cores, 0), {}, {}, {}});
        segments_.back().clock[core] = 1;
    }

    // `blocks` blocks of `len` bytes, `pitch` bytes apart from `gm` on.
    void Record(const char *call, const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, GmAccess kind)
    {
        Ranges &ranges = segments_.back().ranges[int(kind)];
        const uint64_t base = reinterpret_cast<uintptr_t>(gm);
        if (pitch == len) {  // contiguous blocks: one range
            Add(ranges, base, base + uint64_t(blocks) * len, call);
            return;
        }
        for (uint32_t i = 0; i < blocks; ++i) {
            Add(ranges, base + i * pitch, base + i * pitch + len, call);
        }
    }
    // The bytes a plain write put there, from the core's own copy of them (`src`, `src_pitch` apart).
    void Wrote(const void *gm, uint32_t blocks, uint64_t len, uint64_t pitch, const void *src, uint64_t src_pitch)
    {
        Segment &seg = segments_.back();
        const uint64_t base = reinterpret_cast<uintptr_t>(gm);
        for (uint32_t i = 0; i < blocks; ++i) {
            const uint64_t lo = base + i * pitch;
            if (!seg.written.empty() && seg.written.back().lo + seg.written.back().len == lo) {
                seg.written.back().len += len;  // continues the last write: one record
            } else {
                seg.written.push_back({lo, len, seg.arena.size()});
            }
            seg.arena.append(static_cast<const char *>(src) + i * src_pitch, len);
        }
    }

    // A SyncAll: what follows is ordered after everything before it on every core.
    void NextInterval() { Begin(segments_.back().interval + 1, segments_.back().clock); }
    // A DataSyncBarrier: every GM access before it is done; a flag written from now on publishes that.
    void Release()
    {
        released_ = segments_.back().clock;
        Begin(segments_.back().interval, segments_.back().clock);
    }
    // What a flag write publishes (empty without a DataSyncBarrier before it).
    const GmClock &Released() const { return released_; }
    // A flag read returned what a release published: what follows is ordered after it.
    void Acquire(const GmClock &published)
    {
        const GmClock &now = segments_.back().clock;
        bool newer = false;
        for (size_t c = 0; c < published.size() && c < now.size(); ++c) newer |= published[c] > now[c];
        if (!newer) return;
        GmClock merged = now;
        for (size_t c = 0; c < published.size() && c < now.size(); ++c) merged[c] = std::max(merged[c], published[c]);
        Begin(segments_.back().interval, merged);
    }

    uint32_t CoreIndex() const { return core_; }
    const std::vector<Segment> &Segments() const { return segments_; }

private:
    void Begin(size_t interval, GmClock clock)
    {
        clock[core_] = segments_.size() + 1;
        segments_.push_back(Segment{interval, std::move(clock), {}, {}, {}});
    }
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

    uint32_t core_;
    std::vector<Segment> segments_;
    GmClock released_;
};

// The flags of a launch: per GM address, the bytes the last WriteGmByPassDCache put there and the
// clock it published. The scalar access and its bookkeeping happen under one lock, so a reader
// knows which write it observed.
class GmFlags {
public:
    void Write(void *addr, const void *value, size_t n, const GmClock &published)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::memcpy(addr, value, n);
        flags_[reinterpret_cast<uintptr_t>(addr)] = Flag{std::string(static_cast<const char *>(value), n), published};
        ++writes_;
    }
    uint64_t Writes()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return writes_;
    }
    // Reads n bytes at addr into out; returns the clock published by the write it observed (empty:
    // none, e.g. the flag was not written yet or was written without a DataSyncBarrier before it).
    GmClock Read(const void *addr, void *out, size_t n)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::memcpy(out, addr, n);
        auto it = flags_.find(reinterpret_cast<uintptr_t>(addr));
        if (it == flags_.end() || it->second.value.size() != n || std::memcmp(it->second.value.data(), out, n) != 0) {
            return {};
        }
        return it->second.published;
    }

private:
    struct Flag {
        std::string value;
        GmClock published;
    };
    std::mutex mutex_;
    std::map<uint64_t, Flag> flags_;
    uint64_t writes_ = 0;
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

// True when segment s of core a happens before segment t of another core.
inline bool HappensBefore(const GmAccessLog::Segment &s, uint32_t a, const GmAccessLog::Segment &t)
{
    return s.interval < t.interval || t.clock[a] >= s.clock[a];
}

// True when the plain writes of both segments cover every byte of [lo, hi), each byte always with
// the same value: then every order of the two cores' writes leaves the same bytes.
inline bool SameBytes(const GmAccessLog::Segment &s, const GmAccessLog::Segment &t, uint64_t lo, uint64_t hi)
{
    std::vector<int> value(hi - lo, -1);
    for (const GmAccessLog::Segment *seg : {&s, &t}) {
        std::vector<char> covered(hi - lo, 0);
        for (const GmAccessLog::Bytes &w : seg->written) {
            const uint64_t from = std::max(lo, w.lo), to = std::min(hi, w.lo + w.len);
            for (uint64_t x = from; x < to; ++x) {
                const int v = static_cast<uint8_t>(seg->arena[w.at + x - w.lo]);
                if (value[x - lo] >= 0 && value[x - lo] != v) return false;
                value[x - lo] = v;
                covered[x - lo] = 1;
            }
        }
        if (std::find(covered.begin(), covered.end(), 0) != covered.end()) return false;
    }
    return true;
}

// The first place where one core's access meets another core's write with neither ordered before
// the other: "" when the launch kept the rule, else the rule error. `where(address)` names a GM
// address for the message (buffer and byte offset).
inline std::string CheckGmOrder(const std::vector<GmAccessLog> &logs,
                                const std::function<std::string(uint64_t)> &where)
{
    using K = GmAccess;
    struct Pair {
        GmAccess access, write;  // of core b, of core a
    };
    std::vector<Pair> pairs;
    for (int x = 0; x < kGmAccessKinds; ++x) {
        for (int y = 0; y < kGmAccessKinds; ++y) {
            if (NeedsOrder(GmAccess(x), GmAccess(y))) pairs.push_back({GmAccess(x), GmAccess(y)});
        }
    }
    auto plain = [](GmAccess k) { return k == K::kWrite || k == K::kFlagWrite; };
    for (size_t b = 0; b < logs.size(); ++b) {
        for (size_t a = 0; a < logs.size(); ++a) {
            if (a == b) continue;
            for (const GmAccessLog::Segment &t : logs[b].Segments()) {
                for (const GmAccessLog::Segment &s : logs[a].Segments()) {
                    if (HappensBefore(s, uint32_t(a), t) || HappensBefore(t, uint32_t(b), s)) continue;
                    for (const Pair &p : pairs) {
                        const GmAccessLog::Ranges &mine = t.ranges[int(p.access)], &theirs = s.ranges[int(p.write)];
                        auto x = mine.begin(), y = theirs.begin();
                        while (x != mine.end() && y != theirs.end()) {  // both sorted and disjoint: one sweep
                            const uint64_t lo = std::max(x->first, y->first), hi = std::min(x->second.hi, y->second.hi);
                            const bool identical = plain(p.access) && plain(p.write) && lo < hi && SameBytes(s, t, lo, hi);
                            if (lo < hi && !identical) {
                                return "core " + std::to_string(b) + ": " + x->second.call + ": " +
                                       AccessVerb(p.access, false) + " GM bytes that core " + std::to_string(a) + " " +
                                       AccessVerb(p.write, true) + " (" +
                                       y->second.call + ") with no SyncAll in between; another core's GM writes are "
                                       "ordered only by a SyncAll, or by a flag the writer sets with WriteGmByPassDCache "
                                       "after DataSyncBarrier and the reader sees with ReadGmByPassDCache (" +
                                       std::to_string(hi - lo) + " bytes from " + where(lo) + ", SyncAll interval " +
                                       std::to_string(t.interval) +
                                       (plain(p.access) && plain(p.write) ? "; the two writes' bytes differ" : "") + ")";
                            }
                            (x->second.hi <= y->second.hi) ? ++x : ++y;
                        }
                    }
                }
            }
        }
    }
    return "";
}

}  // namespace twin
