// SPDX-License-Identifier: BSD-3-Clause
// Drives the ATB operation of framework/atb_plugin through ATB's interface (CreateOperation,
// InferShape, Setup, Execute, DestroyOperation) against the AscendCL/aclnn and libatb stand-ins,
// printing one line per stage, "<stage> <status> ...", between the stand-ins' own log lines.
// Arguments: the tensors as in tests/atb_plugin/tensor_args.h, then changes to make:
//   --rsv=<byte>            param.rsv[7]                --null=<name>        its deviceData null
//   --size=<name>:<delta>   its dataSize off by delta   --dimnum=<name>:<n>  its shape.dimNum = n
//   --streams=<n>           streams in the context      --stream_id=<n>      SetExecuteStreamId(n)
//   --workspace=short|long|null  Execute's workspace: a byte short, 64 bytes more, or none
//   --setup=skip|twice      no Setup / Execute twice
//   --context=null          Setup without a context     --change=<name>      Execute sees it moved
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl_names.h"
#include "atb/context.h"
#include "atb/operation.h"
#include "atb/operation_infra.h"
#include "atb/utils.h"
#include "rms_norm_backward_operation.h"
#include "tensor_args.h"

namespace {

aclFormat FormatOf(const std::string &name)
{
    for (aclFormat f : {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_FRACTAL_NZ}) {
        if (rmsnorm_backward::atb::FormatName(f) == name) return f;
    }
    return ACL_FORMAT_UNDEFINED;
}

std::string Desc(const atb::TensorDesc &d)
{
    std::string text = rmsnorm_backward::atb::DtypeName(d.dtype) + "[";
    for (uint64_t i = 0; i < d.shape.dimNum && i < atb::MAX_DIM; ++i) {
        text += (i ? "," : "") + std::to_string(d.shape.dims[i]);
    }
    return text + "]/" + rmsnorm_backward::atb::FormatName(d.format);
}

struct Run {
    std::vector<std::string> names;
    std::map<std::string, atb::Tensor> tensors;
    std::map<std::string, std::string> options;
    std::vector<void *> memory;

    std::string Option(const std::string &key) const
    {
        auto it = options.find(key);
        return it == options.end() ? "" : it->second;
    }

    void *Allocate(uint64_t bytes)
    {
        void *p = nullptr;
        aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
        memory.push_back(p);
        return p;
    }

    void Add(const TensorArg &arg)
    {
        atb::Tensor t;
        t.desc.dtype = rmsnorm_backward::atb::DtypeOf(arg.dtype);
        t.desc.format = FormatOf(arg.format);
        t.desc.shape.dimNum = arg.dims.size();
        for (size_t i = 0; i < arg.dims.size() && i < atb::MAX_DIM; ++i) t.desc.shape.dims[i] = arg.dims[i];
        t.dataSize = atb::Utils::GetTensorSize(t);
        t.deviceData = Allocate(t.dataSize);
        names.push_back(arg.name);
        tensors[arg.name] = t;
    }

    // "--size=x:-4": the tensor x and the number -4.
    atb::Tensor *Target(const std::string &key, long long &number)
    {
        const std::string value = Option(key);
        if (value.empty()) return nullptr;
        const size_t colon = value.find(':');
        number = colon == std::string::npos ? 0 : std::stoll(value.substr(colon + 1));
        return &tensors[value.substr(0, colon)];
    }

    void Apply()
    {
        long long n = 0;
        if (atb::Tensor *t = Target("null", n)) t->deviceData = nullptr;
        if (atb::Tensor *t = Target("size", n)) t->dataSize += n;
        if (atb::Tensor *t = Target("dimnum", n)) t->desc.shape.dimNum = n;
    }

    atb::VariantPack Pack()
    {
        atb::VariantPack pack;
        for (const std::string &n : names) {
            (n == "dx" || n == "dgamma" ? pack.outTensors : pack.inTensors).push_back(tensors[n]);
        }
        return pack;
    }
};

void Stages(Run &run, atb::Operation *op, atb::Context *context)
{
    if (!run.Option("stream_id").empty()) {
        static_cast<atb::OperationInfra *>(op)->SetExecuteStreamId(std::stoul(run.Option("stream_id")));
    }
    run.Apply();
    atb::VariantPack pack = run.Pack();
    atb::SVector<atb::TensorDesc> inDescs, outDescs;
    for (size_t i = 0; i < pack.inTensors.size(); ++i) inDescs.push_back(pack.inTensors.at(i).desc);
    const atb::Status inferred = op->InferShape(inDescs, outDescs);
    std::printf("InferShape %d", inferred);
    for (size_t i = 0; i < outDescs.size(); ++i) std::printf(" %s", Desc(outDescs.at(i)).c_str());
    std::printf("\n");

    uint64_t workspaceSize = 0;
    if (run.Option("setup") != "skip") {
        atb::Context *given = run.Option("context") == "null" ? nullptr : context;
        const atb::Status setup = op->Setup(pack, workspaceSize, given);
        std::printf("Setup %d %llu\n", setup, static_cast<unsigned long long>(workspaceSize));
    }
    const std::string ws = run.Option("workspace");
    const uint64_t size = ws == "short" ? workspaceSize - 1 : ws == "long" ? workspaceSize + 64 : workspaceSize;
    uint8_t *workspace = size > 0 ? static_cast<uint8_t *>(run.Allocate(size)) : nullptr;
    if (ws == "null") workspace = nullptr;
    if (!run.Option("change").empty()) {
        atb::Tensor &t = run.tensors[run.Option("change")];
        t.deviceData = run.Allocate(t.dataSize);
        pack = run.Pack();
    }
    std::printf("Execute %d\n", op->Execute(pack, workspace, size, context));
    if (run.Option("setup") == "twice") std::printf("Execute %d\n", op->Execute(pack, workspace, size, context));
}

}  // namespace

int main(int argc, char **argv)
{
    Run run;
    std::vector<std::pair<std::string, std::string>> options;
    const std::vector<TensorArg> args = ParseLine(std::vector<std::string>(argv + 1, argv + argc), options);
    run.options.insert(options.begin(), options.end());

    aclInit(nullptr);
    aclrtSetDevice(0);
    atb::Context *context = nullptr;
    atb::CreateContext(&context);
    std::vector<aclrtStream> streams(run.Option("streams").empty() ? 1 : std::stoi(run.Option("streams")));
    for (aclrtStream &s : streams) aclrtCreateStream(&s);
    context->SetExecuteStreams(streams);

    rmsnorm_backward::atb::RmsNormBackwardParam param;
    if (!run.Option("rsv").empty()) param.rsv[7] = static_cast<uint8_t>(std::stoi(run.Option("rsv")));
    atb::Operation *op = nullptr;
    const atb::Status created = rmsnorm_backward::atb::CreateOperation(param, &op);
    std::printf("CreateOperation %d %s\n", created, op == nullptr ? "null" : op->GetName().c_str());
    if (op != nullptr) {
        std::printf("Counts %u %u\n", op->GetInputNum(), op->GetOutputNum());
        for (const TensorArg &a : args) run.Add(a);
        Stages(run, op, context);
        atb::DestroyOperation(op);  // first: after a failed stage it may still hold aclTensors
    }
    for (void *p : run.memory) aclrtFree(p);
    for (aclrtStream s : streams) aclrtDestroyStream(s);
    atb::DestroyContext(context);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
