// Test double of the aclnn tensor API the generated aclnn header and the demo use.
#pragma once
#include "acl/acl.h"

typedef int aclnnStatus;
enum aclDataType { ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_BF16 = 27 };
enum aclFormat { ACL_FORMAT_ND = 2 };
struct aclTensor;
struct aclOpExecutor;

extern "C" {
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
}
