// SPDX-License-Identifier: BSD-3-Clause
// Runs a CANN operator's registered tiling function (IMPL_OP_OPTILING) on the host, for any shape:
// a thin gert::TilingContext laid out as metadef's public exe_graph headers read it, the platform
// stand-in of cann_platform.cpp, and the log stand-in below. Built by rmsnorm_backward.perf.cann
// together with ops-nn's tiling source and the public metadef/ge/opbase/asc-devkit sources it needs,
// all read from their fetched checkouts at build time.
//
// The context's values, in the order tiling_context.h reads them:
//   inputs   one StorageShape per operator input, then one per output; the compile info (the op's
//            CompileInfo as its creator makes it, filled by the op's TilingParse from the platform:
//            the compile-time JSON an NPU build hands TilingParse is "{}" here, as the ops built
//            here read only the platform there); the PlatFormInfos; the tiling function; the
//            deterministic flag; the deterministic level
//   attrs    the operator's IR attributes in the compute node (RuntimeAttrs: metadef's
//            runtime_attrs_def.h layout, each value 8-byte aligned)
//   outputs  tiling key, block dim, atomic-clean flag, TilingData, workspace sizes, tiling condition,
//            schedule mode, dynamic UB size, AICPU block dim, SIMT block and grid dims
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dlog_pub.h"
#include "exe_graph/runtime/compute_node_info.h"
#include "exe_graph/runtime/continuous_vector.h"
#include "exe_graph/runtime/kernel_run_context.h"
#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/tiling_context.h"
#include "exe_graph/runtime/tiling_parse_context.h"
#include "base/runtime/runtime_attrs_def.h"
#include "exe_graph/runtime/tiling_data.h"
#include "platform/platform_infos_def.h"
#include "register/op_impl_registry.h"
#include "register/op_impl_registry_base.h"
#include "register/tilingdata_base.h"
#include "twin/platform.h"

namespace {

// The errors CANN's code logged during the current call (its DLOG_ERROR records), for the caller.
thread_local std::string g_errors;

}  // namespace

extern "C" int32_t CheckLogLevel(int32_t, int32_t level)
{
    return level >= DLOG_ERROR ? 1 : 0;
}

extern "C" void DlogRecord(int32_t, int32_t level, const char *fmt, ...)
{
    if (level < DLOG_ERROR) {
        return;
    }
    char line[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof(line), fmt, args);
    va_end(args);
    g_errors += g_errors.empty() ? "" : "\n";
    g_errors += line;
}

extern "C" {

// One tensor of the request: its shape (at most 8 dims, CANN's limit) and dtype as numpy names it.
struct CannTensor {
    int32_t rank;
    int64_t dims[8];
    const char *dtype;
};

struct CannTilingRequest {
    const char *op_type;  // as registered, e.g. "RmsNormGrad"
    const char *soc;      // a name of the project's SoC table, e.g. "Ascend910B2"
    int32_t num_inputs;
    const CannTensor *inputs;
    int32_t num_outputs;
    const CannTensor *outputs;
    int32_t deterministic;  // what the framework's deterministic switch says: 0 or 1
    int32_t num_attrs;      // the operator's attributes in IR order; every one a float (the ops run
    const float *attrs;     // here have no other kind)
};

struct CannTilingResult {
    uint64_t tiling_key;
    uint32_t block_dim;
    uint32_t schedule_mode;
    uint64_t tiling_size;
    uint8_t tiling[16384];
    uint64_t workspace_count;
    uint64_t workspace[8];
    char error[4096];
};

}  // extern "C"

namespace {

bool DataTypeOf(const char *name, ge::DataType &out)
{
    static const struct {
        const char *name;
        ge::DataType type;
    } kTypes[] = {{"float32", ge::DT_FLOAT}, {"float16", ge::DT_FLOAT16}, {"bfloat16", ge::DT_BF16},
                  {"int32", ge::DT_INT32}, {"int64", ge::DT_INT64}, {"int8", ge::DT_INT8}, {"uint8", ge::DT_UINT8}};
    for (const auto &t : kTypes) {
        if (std::strcmp(t.name, name) == 0) {
            out = t.type;
            return true;
        }
    }
    return false;
}

gert::StorageShape ShapeOf(const CannTensor &t)
{
    gert::StorageShape shape;
    for (int32_t i = 0; i < t.rank; ++i) {
        shape.MutableOriginShape().AppendDim(t.dims[i]);
        shape.MutableStorageShape().AppendDim(t.dims[i]);
    }
    return shape;
}

// Every value of one context and the block of pointers to them, alive for one call.
class ThinTilingContext {
public:
    bool Build(const CannTilingRequest &req, fe::PlatFormInfos *platform, void *compile_info,
               gert::OpImplRegisterV2::TilingKernelFunc tiling, size_t max_tiling_bytes, std::string &error)
    {
        const size_t n_in = size_t(req.num_inputs);
        const size_t n_out = size_t(req.num_outputs);
        const size_t n_attrs = req.num_attrs > 0 ? size_t(req.num_attrs) : 0;
        const size_t attr_bytes = n_attrs == 0 ? 0 : sizeof(RuntimeAttrsDef) + n_attrs * 2 * sizeof(uint64_t);
        size_t node_bytes = 0;
        if (gert::ComputeNodeInfo::CalcSize(n_in, n_out, n_in, n_out, node_bytes) != ge::GRAPH_SUCCESS) {
            error = "the compute node of " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) +
                    " outputs is too large";
            return false;
        }
        node_holder_.reset(new uint8_t[node_bytes + attr_bytes]());
        auto *node = reinterpret_cast<gert::ComputeNodeInfo *>(node_holder_.get());
        node->Init(n_in, n_out, n_in, n_out, attr_bytes, req.op_type, req.op_type);
        if (n_attrs != 0) {
            auto *attrs = reinterpret_cast<RuntimeAttrsDef *>(node->MutableAttrs());
            attrs->attr_num = n_attrs;
            for (size_t i = 0; i < n_attrs; ++i) {
                attrs->offset[i] = sizeof(RuntimeAttrsDef) + (n_attrs + i) * sizeof(uint64_t);
                std::memcpy(reinterpret_cast<uint8_t *>(attrs) + attrs->offset[i], &req.attrs[i], sizeof(float));
            }
        }
        for (size_t i = 0; i < n_in + n_out; ++i) {
            const bool input = i < n_in;
            const CannTensor &t = input ? req.inputs[i] : req.outputs[i - n_in];
            if (t.rank < 0 || t.rank > 8) {
                error = "tensor " + std::to_string(i) + " has rank " + std::to_string(t.rank) + ", not 0 to 8";
                return false;
            }
            ge::DataType dtype;
            if (!DataTypeOf(t.dtype, dtype)) {
                error = std::string("tensor ") + std::to_string(i) + " has dtype " + t.dtype + ", which has no ge::DataType here";
                return false;
            }
            gert::CompileTimeTensorDesc *desc =
                input ? node->MutableInputTdInfo(i) : node->MutableOutputTdInfo(i - n_in);
            desc->SetDataType(dtype);
            desc->SetOriginFormat(ge::FORMAT_ND);
            desc->SetStorageFormat(ge::FORMAT_ND);
            *(input ? node->MutableInputInstanceInfo(i) : node->MutableOutputInstanceInfo(i - n_in)) =
                gert::AnchorInstanceInfo(uint32_t(input ? i : i - n_in), 1);
            shapes_.push_back(ShapeOf(t));
        }
        tiling_data_ = gert::TilingData::CreateCap(max_tiling_bytes);
        workspace_ = gert::ContinuousVector::Create<size_t>(8);
        const size_t n_values = (n_in + n_out + 5) + gert::TilingContext::kOutputNum;
        values_.assign(n_values, AsyncAnyValue{});
        size_t v = 0;
        for (auto &shape : shapes_) {
            values_[v++].data.pointer = &shape;
        }
        values_[v++].data.pointer = compile_info;
        values_[v++].data.pointer = platform;
        values_[v++].data.pointer = reinterpret_cast<void *>(tiling);
        std::memcpy(values_[v++].data.inplace, &req.deterministic, sizeof(int32_t));
        v++;  // deterministic level: 0
        const size_t inputs = v;
        auto *td = reinterpret_cast<gert::TilingData *>(tiling_data_.get());
        std::memcpy(values_[inputs + gert::TilingContext::kOutputTilingData].data.inplace, &td, sizeof(td));
        values_[inputs + gert::TilingContext::kOutputWorkspace].data.pointer = workspace_.get();
        values_[inputs + gert::TilingContext::kOutputSimtBlockDim].data.pointer = &simt_block_;
        values_[inputs + gert::TilingContext::kOutputSimtGridDim].data.pointer = &simt_grid_;
        context_holder_.reset(new uint8_t[sizeof(KernelRunContext) + sizeof(AsyncAnyValue *) * n_values]());
        auto *run = reinterpret_cast<KernelRunContext *>(context_holder_.get());
        run->input_size = inputs;
        run->output_size = gert::TilingContext::kOutputNum;
        run->compute_node_info = node;
        for (size_t i = 0; i < n_values; ++i) {
            run->values[i] = &values_[i];
        }
        run->output_start = &run->values[inputs];
        return true;
    }

    gert::TilingContext *Context() { return reinterpret_cast<gert::TilingContext *>(context_holder_.get()); }

    // The op's TilingParse on a TilingParseContext (inputs: the compile-time JSON, the platform; output:
    // the compile info it fills), as the framework runs it once per compiled op before any tiling.
    ge::graphStatus Parse(gert::OpImplRegisterV2::KernelFunc parse, fe::PlatFormInfos *platform, void *compile_info)
    {
        static const char kJson[] = "{}";
        AsyncAnyValue values[3] = {};
        values[0].data.pointer = const_cast<char *>(kJson);
        values[1].data.pointer = platform;
        values[2].data.pointer = compile_info;
        std::unique_ptr<uint8_t[]> holder(new uint8_t[sizeof(KernelRunContext) + sizeof(AsyncAnyValue *) * 3]());
        auto *run = reinterpret_cast<KernelRunContext *>(holder.get());
        run->input_size = 2;
        run->output_size = 1;
        run->compute_node_info = node_holder_.get();
        for (size_t i = 0; i < 3; ++i) {
            run->values[i] = &values[i];
        }
        run->output_start = &run->values[2];
        return parse(reinterpret_cast<gert::KernelContext *>(run));
    }

private:
    std::unique_ptr<uint8_t[]> node_holder_;
    std::unique_ptr<uint8_t[]> context_holder_;
    std::unique_ptr<uint8_t[]> tiling_data_;
    std::unique_ptr<uint8_t[]> workspace_;
    std::vector<gert::StorageShape> shapes_;
    std::vector<AsyncAnyValue> values_;
    gert::Dim3 simt_block_{1};
    gert::Dim3 simt_grid_{1};
};

bool Fail(CannTilingResult *out, const std::string &why)
{
    std::snprintf(out->error, sizeof(out->error), "%s", why.c_str());
    return false;
}

bool Run(const CannTilingRequest &req, CannTilingResult *out)
{
    const twin::SocInfo *soc = twin::FindSoc(req.soc);
    if (soc == nullptr) {
        return Fail(out, std::string("soc ") + req.soc + " is not in the project's SoC table");
    }
    const auto *impl = gert::OpImplRegistry::GetInstance().GetOpImpl(req.op_type);
    if (impl == nullptr || impl->tiling == nullptr) {
        return Fail(out, std::string("no tiling function is registered for ") + req.op_type);
    }
    fe::PlatFormInfos platform(*soc);
    std::unique_ptr<void, void (*)(void *)> compile_info(
        impl->compile_info_creator != nullptr ? impl->compile_info_creator() : nullptr,
        impl->compile_info_deleter != nullptr ? impl->compile_info_deleter : [](void *) {});
    ThinTilingContext holder;
    std::string error;
    const size_t capacity = std::min(impl->max_tiling_data_size, sizeof(out->tiling));
    if (!holder.Build(req, &platform, compile_info.get(), impl->tiling, capacity, error)) {
        return Fail(out, error);
    }
    gert::TilingContext *context = holder.Context();
    g_errors.clear();
    if (impl->tiling_parse != nullptr && compile_info != nullptr &&
        holder.Parse(impl->tiling_parse, &platform, compile_info.get()) != ge::GRAPH_SUCCESS) {
        return Fail(out, std::string(req.op_type) + "'s TilingParse failed" + (g_errors.empty() ? "" : ": " + g_errors));
    }
    const ge::graphStatus status = impl->tiling(context);
    for (const std::string &refused : platform.Refused()) {
        g_errors += (g_errors.empty() ? "" : "\n") + refused;
    }
    if (status != ge::GRAPH_SUCCESS || !platform.Refused().empty()) {
        return Fail(out, std::string(req.op_type) + "'s tiling failed" + (g_errors.empty() ? "" : ": " + g_errors));
    }
    const gert::TilingData *data = context->GetRawTilingData();
    out->tiling_key = context->GetTilingKey();
    out->block_dim = context->GetBlockDim();
    out->schedule_mode = context->GetScheduleMode();
    out->tiling_size = data->GetDataSize();
    std::memcpy(out->tiling, data->GetData(), data->GetDataSize());
    out->workspace_count = context->GetWorkspaceNum();
    const size_t *sizes = context->GetWorkspaceSizes(out->workspace_count);
    for (size_t i = 0; i < out->workspace_count && i < 8; ++i) {
        out->workspace[i] = sizes[i];
    }
    return true;
}

}  // namespace

// 0 when the tiling ran; otherwise non-zero with the reason (CANN's own logged errors) in out->error.
extern "C" int32_t CannTiling(const CannTilingRequest *req, CannTilingResult *out)
{
    std::memset(out, 0, sizeof(*out));
    return Run(*req, out) ? 0 : 1;
}

// The tiling struct `op_type` registers (REGISTER_TILING_DATA_CLASS), as the kernel side of CANN's build
// reads it: the class name on the first line, then one line per field in order, "name dtype count"
// (count 0 for a scalar; the alignment padding the struct inserts is a uint8_t array). 0 when written;
// non-zero with the reason otherwise.
extern "C" int32_t CannTilingFields(const char *op_type, char *out, uint64_t capacity)
{
    const auto def = optiling::CTilingDataClassFactory::GetInstance().CreateTilingDataInstance(op_type);
    if (def == nullptr) {
        std::snprintf(out, capacity, "no tiling struct is registered for %s", op_type);
        return 1;
    }
    std::string text = def->GetTilingClassName();
    for (const optiling::FieldInfo &field : def->GetFieldInfo()) {
        if (std::strcmp(field.classType_, "2") == 0) {
            std::snprintf(out, capacity, "the tiling struct of %s nests struct %s, which a field list does not describe",
                          op_type, field.structType_);
            return 1;
        }
        const bool array = std::strcmp(field.classType_, "1") == 0;
        text += std::string("\n") + field.name_ + " " + field.dtype_ + " " + std::to_string(array ? field.arrSize_ : 0);
    }
    std::snprintf(out, capacity, "%s", text.c_str());
    return text.size() < capacity ? 0 : 1;
}
