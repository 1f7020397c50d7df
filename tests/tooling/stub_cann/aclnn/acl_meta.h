// SPDX-License-Identifier: BSD-3-Clause
// Test double of the aclnn tensor API the generated aclnn header, the demos and the public ATB headers
// (atb/types.h) use; enumerator values as AscendCL documents them.
#pragma once
#include "acl/acl.h"

typedef int aclnnStatus;
enum aclDataType {
    ACL_DT_UNDEFINED = -1, ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT8 = 2, ACL_INT32 = 3, ACL_UINT8 = 4,
    ACL_INT16 = 6, ACL_INT64 = 9, ACL_DOUBLE = 11, ACL_BOOL = 12, ACL_BF16 = 27
};
enum aclFormat {
    ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2, ACL_FORMAT_FRACTAL_NZ = 29
};
struct aclTensor;
struct aclOpExecutor;
struct aclIntArray;
struct aclTensorList;

extern "C" {
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
}
