// Validation and tiling of RmsNormBackward (see rms_norm_backward_tiling.h). The UB budgets below are
// the buffers the kernel classes allocate, buffer by buffer (their headers carry the same table).
#include "rms_norm_backward_tiling.h"

#include <algorithm>
#include <sstream>

#include "../soc_table.h"
#include "../../op_kernel/rms_norm_backward_ub_layout.h"

namespace rmsnorm_backward {
namespace {

constexpr int64_t kMaxRank = 8;
// Small-cols path: rows of at most this many UB elements where 8 rows fit in UB (on 192 KiB up to 816
// 16-bit or 576 fp32 cols). Packed rows beat row by row there: 16384 x 256 fp16 models 19.8 us against
// 52.8 (row by row each instruction's issue cost dominates). The cap keeps a row's repeat stride (S/8
// blocks) within the 8-bit field.
constexpr uint32_t kSmallColsMaxStride = 1024;
constexpr uint32_t kMaxTileRows = 248;         // multiple of 8 below the 255-repeat limit (one repeat per row)
constexpr uint32_t kReduceChunk = 4096;        // fp32 elements per step of the dgamma reduction
// dgamma row groups: each group beyond one costs about cols * (4 + 4 + sizeof(T)) GM bytes (its fp32
// partial written, read back by the reduction, and gamma read again). Allow that overhead up to 2 % of
// the minimum traffic, so reading dy and x once keeps the whole launch within 1.02 x the minimum, and
// never more groups than the largest core count of the supported SoCs. The count depends on the shape
// only: the same input gives the same partials, hence the same dgamma bits, for every block dim.
constexpr double kGroupTrafficShare = 0.02;
constexpr uint32_t kMaxGroups = 48;

uint64_t RoundUp(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

std::string ShapeText(const std::vector<int64_t> &s)
{
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < s.size(); ++i) {
        out << (i ? ", " : "") << s[i];
    }
    out << "]";
    return out.str();
}

bool DtypeCode(const std::string &name, RmsNormBackwardDtype &code, uint32_t &size)
{
    if (name == "float32") { code = RmsNormBackwardDtype::kFloat32; size = 4; return true; }
    if (name == "float16") { code = RmsNormBackwardDtype::kFloat16; size = 2; return true; }
    if (name == "bfloat16") { code = RmsNormBackwardDtype::kBfloat16; size = 2; return true; }
    return false;
}

std::string Validate(const TilingInput &in, uint64_t &rows, uint64_t &cols)
{
    const auto &xs = in.x_shape, &gs = in.gamma_shape, &rs = in.rstd_shape;
    if (xs.empty() || int64_t(xs.size()) > kMaxRank) {
        return "x must have rank 1 to 8 (got rank " + std::to_string(xs.size()) + ").";
    }
    if (gs.empty() || int64_t(gs.size()) > kMaxRank) {
        return "gamma must have rank 1 to 8 (got rank " + std::to_string(gs.size()) + ").";
    }
    for (int64_t d : xs) {
        if (d < 0) return "x must have no negative dims (got " + ShapeText(xs) + ").";
    }
    if (in.dy_shape != xs) {
        return "dy must have the shape of x (dy " + ShapeText(in.dy_shape) + ", x " + ShapeText(xs) + ").";
    }
    if (gs.size() >= xs.size()) {
        return "gamma must have fewer dims than x, being its trailing dims (gamma " + ShapeText(gs) + ", x " +
               ShapeText(xs) + ").";
    }
    const size_t k = gs.size(), lead = xs.size() - k;
    if (!std::equal(gs.begin(), gs.end(), xs.begin() + lead)) {
        return "gamma must equal the trailing " + std::to_string(k) + " dims of x (gamma " + ShapeText(gs) +
               ", x " + ShapeText(xs) + ").";
    }
    std::vector<int64_t> rstd_a(xs.begin(), xs.begin() + lead), rstd_b = rstd_a;
    rstd_a.insert(rstd_a.end(), k, 1);
    if (rs != rstd_a && rs != rstd_b) {
        return "rstd must hold one value per row of x, shaped " + ShapeText(rstd_a) + " or " + ShapeText(rstd_b) +
               " (got " + ShapeText(rs) + ").";
    }
    RmsNormBackwardDtype code;
    uint32_t size;
    if (!DtypeCode(in.x_dtype, code, size)) {
        return "x must be float16, float32 or bfloat16 (got " + in.x_dtype + ").";
    }
    if (in.dy_dtype != in.x_dtype) return "dy must have the dtype of x (dy " + in.dy_dtype + ", x " + in.x_dtype + ").";
    if (in.gamma_dtype != in.x_dtype) {
        return "gamma must have the dtype of x (gamma " + in.gamma_dtype + ", x " + in.x_dtype + ").";
    }
    if (in.rstd_dtype != "float32") return "rstd must be float32 (got " + in.rstd_dtype + ").";
    if (FindSoc(in.soc.c_str()) == nullptr) {
        std::string names;
        for (const SocInfo &s : kSocTable) names += std::string(names.empty() ? "" : ", ") + s.name;
        return "soc must be one of " + names + " (got " + in.soc + ").";
    }
    cols = 1;
    for (int64_t d : gs) cols *= uint64_t(d);
    if (cols == 0 || cols > (1u << 30)) {
        return "gamma must have 1 to 2^30 elements (got " + std::to_string(cols) + ").";
    }
    rows = 1;
    for (size_t i = 0; i < lead; ++i) {
        if (xs[i] != 0 && rows > (uint64_t(1) << 40) / uint64_t(xs[i])) {
            return "x must have at most 2^40 rows (got shape " + ShapeText(xs) + ").";
        }
        rows *= uint64_t(xs[i]);
    }
    return "";
}

namespace layout = rms_norm_backward_layout;

uint64_t SmallColsUb(uint32_t R, uint32_t S, uint32_t s) { return layout::UbBytes(layout::SmallCols(R, S), s); }
uint64_t RowsInUbUb(uint32_t R, uint32_t S, uint32_t s) { return layout::UbBytes(layout::RowsInUb(R, S, s)); }

// Picks the long-rows layout that holds the whole row; false when none fits (the streamed path's rows).
bool TileLongRows(RmsNormBackwardTilingData &t, uint64_t cols, uint32_t s, uint64_t ub)
{
    const uint32_t elems32 = kUbBlockBytes / s;
    // The whole row resident: in rings of chunk slots (the next row streams into the slots pass 2
    // frees) or in three or two row buffers (the next rows stream in during both passes). The ring
    // with dx written over dy's slot and two spare slots comes first: the vector unit never waits for
    // dx to leave (only dy's slot refill does), and the spare slots keep HBM streaming from pass 1 to
    // pass 2. It needs at least two chunks per row (one chunk would only hold whole rows, the row
    // buffers do that better). Each vector instruction costs an issue overhead besides its repeats, so
    // long chunks come first, then smaller chunks, smaller spare and smaller row-sum accumulators:
    // SC lanes instead of C cost one instruction per further SC cols of a chunk, and SC = 0 (one Mul
    // and one ReduceSum per chunk) needs no lane-wise accumulator at all.
    // The row buffers are the buffers of two VECIN queues: each queued or freed one holds an event id
    // (kEventIdsPerEvent per TPipe). The ring's slots are plain buffers ordered by flags.
    static_assert(2 * kMaxRowBuffers <= kEventIdsPerEvent, "row buffers of dy and x must fit the event ids");
    const uint64_t S = RoundUp(cols, elems32);
    constexpr struct { uint32_t rb, C; bool dxQueue; uint32_t SC, spare; } kChoices[] = {
        {1, 4096, false, 4096, 2}, {kMaxRowBuffers, 4096, true, 4096, 0}, {2, 4096, true, 4096, 0}, {2, 2048, true, 2048, 0},
        {1, 4096, true, 4096, 0}, {1, 3072, false, 3072, 2}, {1, 2048, false, 0, 2}, {1, 3072, true, 3072, 1},
        {1, 3072, true, 3072, 0}, {1, 2048, true, 2048, 0}, {1, 2048, false, 2048, 0}, {1, 1856, false, 0, 1},
        {1, 1664, false, 640, 1}, {1, 1536, false, 768, 1}, {1, 2048, false, 1024, 0}, {1, 1536, false, 1536, 0},
        {1, 1024, true, 1024, 0}, {2, 1024, true, 1024, 0}, {1, 512, true, 512, 0}, {2, 512, true, 512, 0}};
    for (const auto &choice : kChoices) {
        const uint64_t XR = choice.rb >= 2 ? S : RoundUp(cols, choice.C);
        if (choice.rb == 1 && (XR / choice.C + choice.spare > kMaxRowSlots || cols <= choice.C)) continue;
        if (layout::UbBytes(layout::LongRows(cols, s, choice.C, choice.rb, choice.dxQueue, choice.SC, choice.spare)) <= ub) {
            t.chunk_cols = choice.C;
            t.sum_cols = choice.SC;
            t.spare_slots = choice.spare;
            t.row_buffers = choice.rb;
            t.dx_over_dy = choice.dxQueue ? 0 : 1;
            return true;
        }
    }
    return false;
}

// Long rows streamed (op_kernel/rms_norm_backward_long_rows_streamed.h): C-col chunks of dy | x
// through Ns slots (read in pass 1 and again in pass 2), gamma whole (Ng = 0) or through Ng chunk
// buffers, the dgamma accumulator for the leading DR cols, the row sum over SC lanes.
struct StreamedChoice {
    uint32_t C, Ns, Ng, SC;
    uint64_t DR;
};
constexpr uint32_t kStreamedSumLanes = 256;  // row-sum lanes at least (1 KiB); up to a chunk where UB is left

uint64_t StreamedUb(const StreamedChoice &c, uint32_t s, uint64_t cols)
{
    return layout::UbBytes(layout::Streamed(cols, s, c.C, c.Ns, c.Ng, c.SC, c.DR));
}

// Modelled cycles per row (PERFORMANCE.md): the core's HBM share (dy, x read, dx written) against
// MTE2's own work (dy and x from HBM, again from L2, gamma chunks from L2, a set-up per copy). Measured
// on the timeline (fp32, 12288 and 16384 cols), a thin stream loses more to latencies: 18 % with 2
// slots, 3.5 % with 3 unless they hold 3/4 of the row. The rates are Ascend910B2's for every SoC, so
// the tiling (and with it every bit of dx) is the same on all of them.
constexpr double kCopySetupCycles = 64;  // the twin's model (copy_issue_cycles, twin/include/twin/timeline.h)
double StreamedCost(const StreamedChoice &c, uint32_t s, uint64_t cols)
{
    const SocInfo &ref = *FindSoc("Ascend910B2");
    const double share = ref.hbm_gbps / ref.clock_ghz / ref.vector_cores, l2 = ref.l2_bytes_per_cycle;
    const double K = double((cols + c.C - 1) / c.C), row = double(cols) * s;
    const double gamma = c.Ng == 0 ? 0 : 2 * (kCopySetupCycles * K + row / l2);
    const double mte2 = 2 * row / share + 2 * row / l2 + 4 * kCopySetupCycles * K + gamma;
    const double hbm = 3 * row / share;
    const double held = double(c.Ns) * c.C / double(cols);
    const double thin = c.Ns == 2 ? 1.18 : c.Ns == 3 && held < 0.75 ? 1.035 : 1.0;
    return std::max(mte2, hbm * thin);
}

// Chunks as even as 64-lane repeats allow (a short last chunk costs a copy set-up for little data),
// as many slots as fit, the cheapest count of chunks; gamma whole in UB when it fits beside dgamma
// (streamed gamma is re-read from L2 by every row).
void TileLongRowsStreamed(RmsNormBackwardTilingData &t, uint64_t cols, uint32_t s, uint64_t ub)
{
    bool found = false;
    StreamedChoice best{};
    double bestCost = 0;
    for (uint32_t Ng : {0u, 2u}) {
        for (uint64_t K = (cols + 4095) / 4096;; ++K) {
            const uint32_t C = uint32_t(RoundUp((cols + K - 1) / K, 64));
            if (C < 512) break;
            StreamedChoice c{C, 0, Ng, kStreamedSumLanes, cols};
            // Stream and gamma slots are buffers of VECIN queues: one event id each (kEventIdsPerEvent).
            while (c.Ns < kMaxRowSlots && c.Ns + Ng < kEventIdsPerEvent &&
                   StreamedUb(StreamedChoice{C, c.Ns + 1, Ng, c.SC, cols}, s, cols) <= ub) {
                ++c.Ns;
            }
            if (c.Ns < 2) continue;
            const double cost = StreamedCost(c, s, cols);
            if (!found || cost < bestCost) {
                found = true;
                best = c;
                bestCost = cost;
            }
        }
        if (found) break;
    }
    if (!found) {  // not even gamma and dgamma fit: dgamma's tail goes through the group's GM partial
        best = StreamedChoice{1024, 2, 2, kStreamedSumLanes, 0};
        best.DR = (ub - StreamedUb(best, s, cols)) / 4 / best.C * best.C;
    }
    for (uint32_t SC : {best.C, 2048u, 1024u, 512u}) {  // fewer row-sum instructions where UB is left
        StreamedChoice wider = best;
        wider.SC = std::min(SC, best.C);
        if (wider.SC > best.SC && StreamedUb(wider, s, cols) <= ub) {
            best = wider;
            break;
        }
    }
    t.chunk_cols = best.C;
    t.spare_slots = 0;
    t.stream_slots = best.Ns;
    t.gamma_slots = best.Ng;
    t.sum_cols = best.SC;
    t.dgamma_ub_cols = uint32_t(best.DR);
}

}  // namespace

const char *TilingPathName(uint32_t tiling_key)
{
    return PathName(PathOf(static_cast<RmsNormBackwardTilingKey>(tiling_key)));
}

bool ComputeTiling(const TilingInput &in, TilingResult &out, std::string &error)
{
    uint64_t rows = 0, cols = 0;
    error = Validate(in, rows, cols);
    if (!error.empty()) return false;
    SocInfo soc = *FindSoc(in.soc.c_str());
    if (in.platform_cores != 0) soc.vector_cores = in.platform_cores;
    if (in.platform_ub_bytes != 0) soc.ub_bytes = uint32_t(in.platform_ub_bytes);
    if (in.platform_sys_workspace_bytes != 0) soc.sys_workspace_bytes = in.platform_sys_workspace_bytes;
    if (in.block_dim_cap > soc.vector_cores) {
        error = "block_dim must be at most the " + std::to_string(soc.vector_cores) + " vector cores of " + soc.name +
                " (got " + std::to_string(in.block_dim_cap) + ").";
        return false;
    }
    RmsNormBackwardDtype dtype;
    uint32_t s;
    DtypeCode(in.x_dtype, dtype, s);
    const uint64_t ub = soc.UbUsableBytes();

    RmsNormBackwardTilingData t{};
    t.rows = rows;
    t.cols = uint32_t(cols);
    t.dtype = uint32_t(dtype);
    t.row_stride = uint32_t(RoundUp(cols, kUbBlockBytes / s));
    t.inv_cols = float(1.0 / double(cols));
    t.tile_rows = 1;

    out.min_bytes = rows * cols * 3 * s + rows * 4 + cols * s + cols * 4;
    const double extra = kGroupTrafficShare * double(out.min_bytes) + double(cols * s);
    uint64_t groups = uint64_t(extra / double(cols * (8 + s)));
    groups = std::max<uint64_t>(1, std::min<uint64_t>({groups, rows, kMaxGroups}));
    t.groups = uint32_t(groups);
    t.partial_stride = uint32_t(RoundUp(cols, 8));
    t.reduce_chunk = kReduceChunk;

    RmsNormBackwardPath path = RmsNormBackwardPath::kLongRows;
    if (t.row_stride <= kSmallColsMaxStride && SmallColsUb(8, t.row_stride, s) <= ub) {
        path = RmsNormBackwardPath::kSmallCols;
        uint32_t R = kMaxTileRows;
        while (R > 8 && SmallColsUb(R, t.row_stride, s) > ub) R -= 8;
        t.tile_rows = R;
    } else {
        uint32_t R = 0;
        while (R < kMaxTileRows && RowsInUbUb(R + 1, t.row_stride, s) <= ub) ++R;
        if (R >= 2) {
            path = RmsNormBackwardPath::kRowsInUb;
            t.tile_rows = R;
        } else {
            if (!TileLongRows(t, cols, s, ub)) {  // too long to keep whole
                path = RmsNormBackwardPath::kLongRowsStreamed;
                TileLongRowsStreamed(t, cols, s, ub);
            }
        }
    }
    out.data = t;
    out.tiling_key = uint32_t(MakeKey(path, dtype));
    out.block_dim = std::min<uint32_t>(t.groups, soc.vector_cores);
    if (in.block_dim_cap != 0) out.block_dim = std::min(out.block_dim, in.block_dim_cap);
    out.user_workspace_bytes = t.groups > 1 ? uint64_t(t.groups) * t.partial_stride * 4 : 0;
    out.workspace_bytes = soc.sys_workspace_bytes + out.user_workspace_bytes;
    return true;
}

std::string CheckOutputs(const TilingInput &in, const std::vector<int64_t> &dx_shape, const std::string &dx_dtype,
                         const std::vector<int64_t> &dgamma_shape, const std::string &dgamma_dtype)
{
    if (dx_shape != in.x_shape) {
        return "dx must have the shape of x (dx " + ShapeText(dx_shape) + ", x " + ShapeText(in.x_shape) + ").";
    }
    if (dx_dtype != in.x_dtype) {
        return "dx must have the dtype of x (dx " + dx_dtype + ", x " + in.x_dtype + ").";
    }
    if (dgamma_shape != in.gamma_shape) {
        return "dgamma must have the shape of gamma (dgamma " + ShapeText(dgamma_shape) + ", gamma " +
               ShapeText(in.gamma_shape) + ").";
    }
    if (dgamma_dtype != "float32") {
        return "dgamma must be float32, whatever the dtype of gamma (got " + dgamma_dtype + ").";
    }
    return "";
}

}  // namespace rmsnorm_backward
