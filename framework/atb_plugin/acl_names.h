// SPDX-License-Identifier: BSD-3-Clause
// Spellings of AscendCL dtypes and formats for the plain rules (operation_rules.h) and their messages.
#pragma once
#include <string>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace rmsnorm_backward::atb {

// NumPy spelling of an aclDataType ("float16", "bfloat16", "int8", ...; "aclDataType <n>" otherwise).
std::string DtypeName(aclDataType dtype);
// The aclDataType of a NumPy spelling DtypeName gives (ACL_DT_UNDEFINED for none).
aclDataType DtypeOf(const std::string &name);
// "ND", "NCHW", "NHWC", "FRACTAL_NZ", ...; "aclFormat <n>" otherwise.
std::string FormatName(aclFormat format);

}  // namespace rmsnorm_backward::atb
