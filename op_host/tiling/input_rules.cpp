// SPDX-License-Identifier: BSD-3-Clause
// The operator's rules on its inputs and outputs (rms_norm_backward_tiling.h): for the first one
// broken, its fault, the tensor it names and one sentence naming that tensor and the rule.
#include "input_rules.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "../rms_norm_backward_dtypes.h"
#include "rms_norm_backward_tiling.h"  // CheckOutputs, the API's part defined here

namespace rmsnorm_backward::tiling {
namespace {

constexpr int64_t kMaxRank = 8;

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

std::string FloatText(float value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

TilingError Broken(TilingFault fault, const std::string &tensor, const std::string &message)
{
    return {fault, tensor, message};
}

TilingError Shape(const std::string &tensor, const std::string &message)
{
    return Broken(TilingFault::kShape, tensor, message);
}

TilingError Dtype(const std::string &tensor, const std::string &message)
{
    return Broken(TilingFault::kDtype, tensor, message);
}

}  // namespace

const char *TilingFaultName(TilingFault fault)
{
    switch (fault) {
        case TilingFault::kShape: return "shape";
        case TilingFault::kDtype: return "dtype";
        case TilingFault::kAttr: return "attr";
        case TilingFault::kPlatform: return "platform";
        case TilingFault::kNone: break;
    }
    return "";
}

bool DtypeCode(const std::string &name, RmsNormBackwardDtype &code, uint32_t &size)
{
    const RmsNormBackwardDtypeInfo *row = FindRmsNormBackwardDtype(name);
    if (row == nullptr) return false;
    code = row->code;
    size = row->size;
    return true;
}

std::string RowDimsWithoutGamma(const std::vector<int64_t> &x, const std::vector<int64_t> &rstd,
                                std::vector<int64_t> &row)
{
    for (size_t k = 1; k < x.size(); ++k) {
        std::vector<int64_t> lead(x.begin(), x.end() - k), keepdims = lead;
        keepdims.insert(keepdims.end(), k, 1);
        if (rstd == lead || rstd == keepdims) {
            row.assign(x.end() - k, x.end());
            return "";
        }
    }
    return "rstd must hold one value per row of x, shaped x.shape[:-k] + (1,)*k or x.shape[:-k] for the k "
           "normalised dims (1 <= k < x.ndim), which give the row when there is no gamma (rstd " + ShapeText(rstd) +
           ", x " + ShapeText(x) + ").";
}

TilingError Validate(const TilingInput &in, uint64_t &rows, uint64_t &cols)
{
    std::vector<int64_t> rowDims;
    if (!in.has_gamma) {
        if (in.x_shape.size() < 2 || in.x_shape.size() > size_t(kMaxRank)) {
            return Shape("x", "x must have rank 2 to 8 without gamma (got rank " + std::to_string(in.x_shape.size()) +
                              ").");
        }
        const std::string why = RowDimsWithoutGamma(in.x_shape, in.rstd_shape, rowDims);
        if (!why.empty()) return Shape("rstd", why);
        if (in.gamma_offset != 0.0f) {
            return Broken(TilingFault::kAttr, "gamma_offset",
                          "gamma_offset must be 0 without gamma (got " + FloatText(in.gamma_offset) + ").");
        }
    }
    const auto &xs = in.x_shape, &gs = in.has_gamma ? in.gamma_shape : rowDims, &rs = in.rstd_shape;
    if (xs.empty() || int64_t(xs.size()) > kMaxRank) {
        return Shape("x", "x must have rank 1 to 8 (got rank " + std::to_string(xs.size()) + ").");
    }
    if (gs.empty() || int64_t(gs.size()) > kMaxRank) {
        return Shape("gamma", "gamma must have rank 1 to 8 (got rank " + std::to_string(gs.size()) + ").");
    }
    for (int64_t d : xs) {
        if (d < 0) return Shape("x", "x must have no negative dims (got " + ShapeText(xs) + ").");
    }
    if (in.dy_shape != xs) {
        return Shape("dy", "dy must have the shape of x (dy " + ShapeText(in.dy_shape) + ", x " + ShapeText(xs) + ").");
    }
    if (gs.size() >= xs.size()) {
        return Shape("gamma", "gamma must have fewer dims than x, being its trailing dims (gamma " + ShapeText(gs) +
                                  ", x " + ShapeText(xs) + ").");
    }
    const size_t k = gs.size(), lead = xs.size() - k;
    if (!std::equal(gs.begin(), gs.end(), xs.begin() + lead)) {
        return Shape("gamma", "gamma must equal the trailing " + std::to_string(k) + " dims of x (gamma " +
                                  ShapeText(gs) + ", x " + ShapeText(xs) + ").");
    }
    std::vector<int64_t> rstd_a(xs.begin(), xs.begin() + lead), rstd_b = rstd_a;
    rstd_a.insert(rstd_a.end(), k, 1);
    if (rs != rstd_a && rs != rstd_b) {
        return Shape("rstd", "rstd must hold one value per row of x, shaped " + ShapeText(rstd_a) + " or " +
                                 ShapeText(rstd_b) + " (got " + ShapeText(rs) + ").");
    }
    RmsNormBackwardDtype code;
    uint32_t size;
    if (!DtypeCode(in.x_dtype, code, size)) {
        return Dtype("x", "x must be float16, float32 or bfloat16 (got " + in.x_dtype + ").");
    }
    if (in.dy_dtype != in.x_dtype) return Dtype("dy", "dy must have the dtype of x (dy " + in.dy_dtype + ", x " + in.x_dtype + ").");
    if (in.has_gamma && in.gamma_dtype != in.x_dtype && in.gamma_dtype != "float32") {
        return Dtype("gamma", "gamma must have the dtype of x, or be float32 (gamma " + in.gamma_dtype + ", x " + in.x_dtype + ").");
    }
    if (in.rstd_dtype != "float32") return Dtype("rstd", "rstd must be float32 (got " + in.rstd_dtype + ").");
    if (in.has_dres && in.dres_shape != xs) {
        return Shape("dres", "dres must have the shape of x (dres " + ShapeText(in.dres_shape) + ", x " + ShapeText(xs) + ").");
    }
    if (in.has_dres && in.dres_dtype != in.x_dtype) {
        return Dtype("dres", "dres must have the dtype of x (dres " + in.dres_dtype + ", x " + in.x_dtype + ").");
    }
    if (!std::isfinite(in.gamma_offset)) {
        return Broken(TilingFault::kAttr, "gamma_offset",
                      "gamma_offset must be finite in float32 (got " + FloatText(in.gamma_offset) + ").");
    }
    if (!in.platform.supported) {
        return Broken(TilingFault::kPlatform, "soc", "soc must be an Atlas A2 or A3 SoC (SocVersion ASCEND910B or "
                                                     "ASCEND910_93; got " + in.platform.soc + ").");
    }
    cols = 1;
    for (int64_t d : gs) cols *= uint64_t(d);
    if (cols == 0 || cols > (1u << 30)) {  // without gamma the row is x's trailing dims that rstd lacks
        const std::string row = in.has_gamma ? "gamma" : "a row of x (without gamma: its trailing dims that rstd lacks)";
        return Shape(in.has_gamma ? "gamma" : "x", row + " must have 1 to 2^30 elements (got " + std::to_string(cols) + ").");
    }
    rows = 1;
    for (size_t i = 0; i < lead; ++i) {
        if (xs[i] != 0 && rows > (uint64_t(1) << 40) / uint64_t(xs[i])) {
            return Shape("x", "x must have at most 2^40 rows (got shape " + ShapeText(xs) + ").");
        }
        rows *= uint64_t(xs[i]);
    }
    return {};
}

TilingError CheckOutputs(const TilingInput &in, const std::vector<int64_t> &dx_shape, const std::string &dx_dtype,
                         const std::vector<int64_t> &dgamma_shape, const std::string &dgamma_dtype)
{
    if (dx_shape != in.x_shape) {
        return Shape("dx", "dx must have the shape of x (dx " + ShapeText(dx_shape) + ", x " + ShapeText(in.x_shape) + ").");
    }
    if (dx_dtype != in.x_dtype) {
        return Dtype("dx", "dx must have the dtype of x (dx " + dx_dtype + ", x " + in.x_dtype + ").");
    }
    if (!in.has_gamma) {
        if (dgamma_shape != std::vector<int64_t>{0}) {
            return Shape("dgamma", "dgamma must be empty, shaped [0], without gamma (got " + ShapeText(dgamma_shape) + ").");
        }
    } else if (dgamma_shape != in.gamma_shape) {
        return Shape("dgamma", "dgamma must have the shape of gamma (dgamma " + ShapeText(dgamma_shape) + ", gamma " +
                                   ShapeText(in.gamma_shape) + ").");
    }
    if (dgamma_dtype != "float32") {
        return Dtype("dgamma", "dgamma must be float32, whatever the dtype of gamma (got " + dgamma_dtype + ").");
    }
    return {};
}

}  // namespace rmsnorm_backward::tiling
