// SPDX-License-Identifier: BSD-3-Clause
// Stand-in for the few libatb definitions that framework/atb_plugin and examples/atb link against,
// written against the declarations of the public ATB headers (ATB_SRC/include): OperationInfra's
// stream id, a host Context, DestroyOperation and Utils::GetTensorSize. Each call a test checks is
// logged as "<call> <args>" on stdout, like tests/tooling/stub_cann/acl_stub.cpp does for AscendCL.
#include <cstdio>
#include <vector>

#include "atb/context.h"
#include "atb/operation.h"
#include "atb/operation_infra.h"
#include "atb/utils.h"

namespace atb {

class OperationImpl {
public:
    uint32_t streamId = 0;
};

OperationInfra::OperationInfra() : impl_(new OperationImpl) {}
OperationInfra::OperationInfra(const OperationInfra &other) : impl_(new OperationImpl(*other.impl_)) {}
OperationInfra &OperationInfra::operator=(const OperationInfra &other)
{
    impl_.reset(new OperationImpl(*other.impl_));
    return *this;
}
OperationInfra::~OperationInfra() = default;
void OperationInfra::SetExecuteStreamId(uint32_t streamId) { impl_->streamId = streamId; }
uint32_t OperationInfra::GetExecuteStreamId() const { return impl_->streamId; }
aclrtStream OperationInfra::GetExecuteStream(Context *context)
{
    const std::vector<aclrtStream> streams = context == nullptr ? std::vector<aclrtStream>() : context->GetExecuteStreams();
    return impl_->streamId < streams.size() ? streams[impl_->streamId] : nullptr;
}

Status DestroyOperation(Operation *operation)
{
    std::printf("DestroyOperation %s\n", operation == nullptr ? "null" : operation->GetName().c_str());
    delete operation;
    return NO_ERROR;
}

namespace {
// One stream slot to start with, which SetExecuteStream fills; SetExecuteStreams replaces them all.
class HostContext : public Context {
public:
    Status SetExecuteStream(aclrtStream stream) override
    {
        streams_.at(0) = stream;
        return NO_ERROR;
    }
    aclrtStream GetExecuteStream() const override { return streams_.empty() ? nullptr : streams_[0]; }
    Status SetAsyncTilingCopyStatus(bool enable) override
    {
        async_ = enable;
        return NO_ERROR;
    }
    bool GetAsyncTilingCopyStatus() const override { return async_; }
    Status SetExecuteStreams(const std::vector<aclrtStream> &streams) override
    {
        streams_ = streams;
        return NO_ERROR;
    }
    std::vector<aclrtStream> GetExecuteStreams() override { return streams_; }
    Status SetExecuteType(ExecuteType type) override
    {
        type_ = type;
        return NO_ERROR;
    }
    ExecuteType GetExecuteType() override { return type_; }
    Status SetLaunchMode(LaunchMode mode) override
    {
        mode_ = mode;
        return NO_ERROR;
    }
    LaunchMode GetLaunchMode() override { return mode_; }

private:
    std::vector<aclrtStream> streams_{nullptr};
    bool async_ = false;
    ExecuteType type_ = EXECUTE_NORMAL;
    LaunchMode mode_ = KERNEL_LAUNCH_MODE;
};

uint64_t ItemSize(aclDataType dtype)
{
    switch (dtype) {
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: return 2;
        case ACL_INT64: case ACL_DOUBLE: return 8;
        default: return 4;
    }
}
}  // namespace

Status CreateContext(Context **context)
{
    *context = new HostContext;
    std::printf("CreateContext\n");
    return NO_ERROR;
}

Status DestroyContext(Context *context)
{
    std::printf("DestroyContext\n");
    delete context;
    return NO_ERROR;
}

uint64_t Utils::GetTensorSize(const TensorDesc &desc)
{
    uint64_t bytes = ItemSize(desc.dtype);
    for (uint64_t i = 0; i < desc.shape.dimNum; ++i) bytes *= static_cast<uint64_t>(desc.shape.dims[i]);
    return bytes;
}

uint64_t Utils::GetTensorSize(const Tensor &tensor) { return GetTensorSize(tensor.desc); }

}  // namespace atb
