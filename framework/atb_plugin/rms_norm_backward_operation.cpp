// SPDX-License-Identifier: BSD-3-Clause
// The ATB operation over aclnnRmsNormBackward (see rms_norm_backward_operation.h). Setup checks the
// variant pack by the plain rules (operation_rules.h, which ask the project's tiling), builds the
// aclTensors and runs the first aclnn stage; Execute runs the second on the execute stream and
// releases what Setup built, so every Execute follows its own Setup, as ATB callers do.
#include "rms_norm_backward_operation.h"

#include <cstdio>
#include <new>
#include <vector>

#include "aclnn_rms_norm_backward.h"
#include "acl_names.h"
#include "atb/operation_infra.h"
#include "atb/train_op_params.h"
#include "atb/utils.h"
#include "operation_rules.h"

namespace rmsnorm_backward::atb {
namespace {

static_assert(sizeof(RmsNormBackwardParam) == sizeof(::atb::train::RmsNormBackwardParam) &&
                  sizeof(RmsNormBackwardParam::rsv) == sizeof(::atb::train::RmsNormBackwardParam::rsv),
              "RmsNormBackwardParam keeps the layout of atb::train::RmsNormBackwardParam");

const char *StatusName(::atb::Status status)
{
    switch (status) {
        case ::atb::ERROR_INVALID_PARAM: return "ERROR_INVALID_PARAM";
        case ::atb::ERROR_INVALID_IN_TENSOR_NUM: return "ERROR_INVALID_IN_TENSOR_NUM";
        case ::atb::ERROR_INVALID_TENSOR_NUM: return "ERROR_INVALID_TENSOR_NUM";
        case ::atb::ERROR_INVALID_TENSOR_DTYPE: return "ERROR_INVALID_TENSOR_DTYPE";
        case ::atb::ERROR_INVALID_TENSOR_FORMAT: return "ERROR_INVALID_TENSOR_FORMAT";
        case ::atb::ERROR_INVALID_TENSOR_DIM: return "ERROR_INVALID_TENSOR_DIM";
        case ::atb::ERROR_INVALID_TENSOR_DIM_NUM: return "ERROR_INVALID_TENSOR_DIM_NUM";
        case ::atb::ERROR_INVALID_TENSOR_SIZE: return "ERROR_INVALID_TENSOR_SIZE";
        case ::atb::ERROR_INVALID_TENSOR_ADDR: return "ERROR_INVALID_TENSOR_ADDR";
        case ::atb::ERROR_INVALID_CONTEXT_ADDR: return "ERROR_INVALID_CONTEXT_ADDR";
        case ::atb::ERROR_INVALID_STREAM: return "ERROR_INVALID_STREAM";
        case ::atb::ERROR_INVALID_WORKSPACE_SIZE: return "ERROR_INVALID_WORKSPACE_SIZE";
        case ::atb::ERROR_INVALID_WORKSPACE_ADDR: return "ERROR_INVALID_WORKSPACE_ADDR";
        case ::atb::ERROR_CANN_ERROR: return "ERROR_CANN_ERROR";
        case ::atb::ERROR_OUT_OF_HOST_MEMORY: return "ERROR_OUT_OF_HOST_MEMORY";
        default: return "ATB error";
    }
}

// The one log line of a broken rule: the operation, the stage, the sentence and the status.
::atb::Status Report(const char *stage, ::atb::Status status, const std::string &sentence)
{
    std::fprintf(stderr, "[%s] %s: %s (%s %d)\n", kOperationName, stage, sentence.c_str(), StatusName(status),
                 static_cast<int>(status));
    return status;
}

::atb::Status StatusOf(Fault fault)
{
    switch (fault) {
        case Fault::kNone: return ::atb::NO_ERROR;
        case Fault::kParam: return ::atb::ERROR_INVALID_PARAM;
        case Fault::kInputCount: return ::atb::ERROR_INVALID_IN_TENSOR_NUM;
        case Fault::kOutputCount: return ::atb::ERROR_INVALID_TENSOR_NUM;
        case Fault::kDtype: return ::atb::ERROR_INVALID_TENSOR_DTYPE;
        case Fault::kFormat: return ::atb::ERROR_INVALID_TENSOR_FORMAT;
        case Fault::kShape: return ::atb::ERROR_INVALID_TENSOR_DIM;
    }
    return ::atb::ERROR_INTERNAL_ERROR;
}

// The plain description of each desc; a dimNum beyond atb::MAX_DIM cannot be read and is refused.
::atb::Status Describe(const char *stage, const ::atb::SVector<::atb::TensorDesc> &descs, const char *const *names,
                     uint32_t known, std::vector<TensorSpec> &specs)
{
    specs.clear();
    for (size_t i = 0; i < descs.size(); ++i) {
        const ::atb::TensorDesc &d = descs.at(i);
        const std::string name = i < known ? names[i] : "tensor " + std::to_string(i);
        if (d.shape.dimNum > ::atb::MAX_DIM) {
            return Report(stage, ::atb::ERROR_INVALID_TENSOR_DIM_NUM,
                          name + ".shape.dimNum must be at most atb::MAX_DIM = " + std::to_string(::atb::MAX_DIM) +
                              " (got " + std::to_string(d.shape.dimNum) + ").");
        }
        specs.push_back({DtypeName(d.dtype), FormatName(d.format),
                         std::vector<int64_t>(d.shape.dims, d.shape.dims + d.shape.dimNum)});
    }
    return ::atb::NO_ERROR;
}

::atb::SVector<::atb::TensorDesc> Descs(const ::atb::SVector<::atb::Tensor> &tensors)
{
    ::atb::SVector<::atb::TensorDesc> descs;
    for (size_t i = 0; i < tensors.size(); ++i) descs.push_back(tensors.at(i).desc);
    return descs;
}

bool SameTensor(const ::atb::Tensor &a, const ::atb::Tensor &b)
{
    bool same = a.deviceData == b.deviceData && a.dataSize == b.dataSize && a.desc.dtype == b.desc.dtype &&
                a.desc.format == b.desc.format && a.desc.shape.dimNum == b.desc.shape.dimNum;
    for (uint64_t i = 0; same && i < a.desc.shape.dimNum; ++i) same = a.desc.shape.dims[i] == b.desc.shape.dims[i];
    return same;
}

// A dense row-major aclTensor viewing t.deviceData.
aclTensor *AclTensorOf(const ::atb::Tensor &t)
{
    const int64_t *dims = t.desc.shape.dims;
    const uint64_t rank = t.desc.shape.dimNum;
    std::vector<int64_t> strides(rank, 1);
    for (uint64_t i = rank; i > 1; --i) strides[i - 2] = strides[i - 1] * dims[i - 1];
    return aclCreateTensor(dims, rank, t.desc.dtype, strides.data(), 0, t.desc.format, dims, rank, t.deviceData);
}

class RmsNormBackwardOperation : public ::atb::OperationInfra {
public:
    RmsNormBackwardOperation() = default;
    RmsNormBackwardOperation(const RmsNormBackwardOperation &) = delete;  // it owns aclTensors between stages
    RmsNormBackwardOperation &operator=(const RmsNormBackwardOperation &) = delete;
    ~RmsNormBackwardOperation() override { Release(); }

    std::string GetName() const override { return kOperationName; }
    uint32_t GetInputNum() const override { return kInputNum; }
    uint32_t GetOutputNum() const override { return kOutputNum; }

    ::atb::Status InferShape(const ::atb::SVector<::atb::TensorDesc> &inTensorDescs,
                           ::atb::SVector<::atb::TensorDesc> &outTensorDescs) const override
    {
        std::vector<TensorSpec> in, out;
        ::atb::Status status = Describe("InferShape", inTensorDescs, kInputNames, kInputNum, in);
        if (status != ::atb::NO_ERROR) return status;
        const Verdict verdict = InferOutputs(in, out);
        if (!verdict.ok()) return Report("InferShape", StatusOf(verdict.fault), verdict.message);
        outTensorDescs.clear();
        for (const OutputRule &rule : kOutputs) {
            ::atb::TensorDesc desc = inTensorDescs.at(rule.shape_of);
            desc.dtype = rule.dtype_of >= 0 ? inTensorDescs.at(rule.dtype_of).dtype : DtypeOf(rule.dtype);
            outTensorDescs.push_back(desc);
        }
        return ::atb::NO_ERROR;
    }

    ::atb::Status Setup(const ::atb::VariantPack &variantPack, uint64_t &workspaceSize, ::atb::Context *context) override
    {
        workspaceSize = 0;
        Release();  // a new Setup replaces one that no Execute used
        if (context == nullptr) return Report("Setup", ::atb::ERROR_INVALID_CONTEXT_ADDR, "context must not be null.");
        ::atb::Status status = CheckPack(variantPack);
        if (status != ::atb::NO_ERROR) return status;
        for (const ::atb::SVector<::atb::Tensor> *group : {&variantPack.inTensors, &variantPack.outTensors}) {
            for (size_t i = 0; i < group->size(); ++i) {
                tensors_.push_back(AclTensorOf(group->at(i)));
                if (tensors_.back() == nullptr) {
                    Release();
                    return Report("Setup", ::atb::ERROR_CANN_ERROR, "aclCreateTensor returned null.");
                }
            }
        }
        // ATB's RmsNormBackwardParam has no offset and its VariantPack no dres: the plain backward.
        constexpr double kGammaOffset = 0.0;
        const aclnnStatus aclnn = aclnnRmsNormBackwardGetWorkspaceSize(tensors_[0], tensors_[1], tensors_[2], tensors_[3],
                                                                       nullptr, kGammaOffset, tensors_[4], tensors_[5],
                                                                       &workspaceSize_, &executor_);
        if (aclnn != 0 || executor_ == nullptr) {
            Release();
            return Report("Setup", ::atb::ERROR_CANN_ERROR,
                          "aclnnRmsNormBackwardGetWorkspaceSize failed with status " + std::to_string(aclnn) + ".");
        }
        setupPack_ = variantPack;
        workspaceSize = workspaceSize_;
        return ::atb::NO_ERROR;
    }

    ::atb::Status Execute(const ::atb::VariantPack &variantPack, uint8_t *workspace, uint64_t workspaceSize,
                        ::atb::Context *context) override
    {
        ::atb::Status status = CheckExecute(variantPack, workspace, workspaceSize, context);
        if (status != ::atb::NO_ERROR) return status;
        // aclnn is given the size it asked for; a larger buffer is fine, the rest stays unused.
        const aclnnStatus aclnn = aclnnRmsNormBackward(workspace, workspaceSize_, executor_, GetExecuteStream(context));
        Release();  // the executor is spent whether or not the launch was accepted
        if (aclnn != 0) {
            return Report("Execute", ::atb::ERROR_CANN_ERROR,
                          "aclnnRmsNormBackward failed with status " + std::to_string(aclnn) + ".");
        }
        return ::atb::NO_ERROR;
    }

private:
    ::atb::Status CheckPack(const ::atb::VariantPack &pack) const
    {
        std::vector<const char *> outNames;
        for (const OutputRule &rule : kOutputs) outNames.push_back(rule.name);
        std::vector<TensorSpec> in, out;
        ::atb::Status status = Describe("Setup", Descs(pack.inTensors), kInputNames, kInputNum, in);
        if (status == ::atb::NO_ERROR) status = Describe("Setup", Descs(pack.outTensors), outNames.data(), kOutputNum, out);
        if (status != ::atb::NO_ERROR) return status;
        const Verdict verdict = CheckOutputs(in, out);
        if (!verdict.ok()) return Report("Setup", StatusOf(verdict.fault), verdict.message);
        for (const ::atb::SVector<::atb::Tensor> *group : {&pack.inTensors, &pack.outTensors}) {
            const char *const *names = group == &pack.inTensors ? kInputNames : outNames.data();
            for (size_t i = 0; i < group->size(); ++i) {
                status = CheckMemory(names[i], group->at(i));
                if (status != ::atb::NO_ERROR) return status;
            }
        }
        return ::atb::NO_ERROR;
    }

    static ::atb::Status CheckMemory(const std::string &name, const ::atb::Tensor &t)
    {
        const uint64_t bytes = ::atb::Utils::GetTensorSize(t.desc);
        if (t.dataSize != bytes) {
            return Report("Setup", ::atb::ERROR_INVALID_TENSOR_SIZE,
                          name + ".dataSize must be the " + std::to_string(bytes) + " bytes of its desc (got " +
                              std::to_string(t.dataSize) + ").");
        }
        if (bytes > 0 && t.deviceData == nullptr) {
            return Report("Setup", ::atb::ERROR_INVALID_TENSOR_ADDR,
                          name + ".deviceData must point at device memory (got null).");
        }
        return ::atb::NO_ERROR;
    }

    ::atb::Status CheckExecute(const ::atb::VariantPack &pack, const uint8_t *workspace, uint64_t workspaceSize,
                             ::atb::Context *context)
    {
        if (executor_ == nullptr) {
            return Report("Execute", ::atb::ERROR_INVALID_PARAM, "Execute must follow a successful Setup, one per Execute.");
        }
        if (context == nullptr) return Report("Execute", ::atb::ERROR_INVALID_CONTEXT_ADDR, "context must not be null.");
        if (pack.inTensors.size() != setupPack_.inTensors.size() ||
            pack.outTensors.size() != setupPack_.outTensors.size()) {
            return Report("Execute", ::atb::ERROR_INVALID_PARAM,
                          "variantPack must hold the tensors Setup was given (the tensor counts differ).");
        }
        for (size_t i = 0; i < kInputNum + kOutputNum; ++i) {
            const bool input = i < kInputNum;
            const size_t j = input ? i : i - kInputNum;
            const ::atb::SVector<::atb::Tensor> &now = input ? pack.inTensors : pack.outTensors;
            const ::atb::SVector<::atb::Tensor> &then = input ? setupPack_.inTensors : setupPack_.outTensors;
            if (!SameTensor(now.at(j), then.at(j))) {
                return Report("Execute", ::atb::ERROR_INVALID_PARAM,
                              std::string(input ? kInputNames[j] : kOutputs[j].name) +
                                  " must be the tensor Setup was given (same desc, deviceData and dataSize).");
            }
        }
        if (workspaceSize < workspaceSize_) {
            return Report("Execute", ::atb::ERROR_INVALID_WORKSPACE_SIZE,
                          "workspaceSize must be at least the " + std::to_string(workspaceSize_) +
                              " bytes Setup returned (got " + std::to_string(workspaceSize) + ").");
        }
        if (workspaceSize_ > 0 && workspace == nullptr) {
            return Report("Execute", ::atb::ERROR_INVALID_WORKSPACE_ADDR,
                          "workspace must point at the device memory of " + std::to_string(workspaceSize_) +
                              " bytes Setup asked for (got null).");
        }
        if (GetExecuteStream(context) == nullptr) {
            return Report("Execute", ::atb::ERROR_INVALID_STREAM,
                          "the context must hold an execute stream for stream id " +
                              std::to_string(GetExecuteStreamId()) + " (set it with Context::SetExecuteStream).");
        }
        return ::atb::NO_ERROR;
    }

    void Release()
    {
        for (aclTensor *t : tensors_) aclDestroyTensor(t);
        tensors_.clear();
        executor_ = nullptr;
        workspaceSize_ = 0;
    }

    std::vector<aclTensor *> tensors_;  // dy, x, rstd, gamma, dx, dgamma from Setup to Execute
    aclOpExecutor *executor_ = nullptr;
    uint64_t workspaceSize_ = 0;
    ::atb::VariantPack setupPack_;
};

}  // namespace

::atb::Status CreateOperation(const RmsNormBackwardParam &param, ::atb::Operation **operation)
{
    if (operation == nullptr) {
        return Report("CreateOperation", ::atb::ERROR_INVALID_PARAM, "operation must not be null.");
    }
    *operation = nullptr;
    const Verdict verdict = CheckReserved(param.rsv, sizeof(param.rsv));
    if (!verdict.ok()) return Report("CreateOperation", StatusOf(verdict.fault), verdict.message);
    *operation = new (std::nothrow) RmsNormBackwardOperation();
    if (*operation == nullptr) {
        return Report("CreateOperation", ::atb::ERROR_OUT_OF_HOST_MEMORY, "no host memory for the operation.");
    }
    return ::atb::NO_ERROR;
}

}  // namespace rmsnorm_backward::atb
