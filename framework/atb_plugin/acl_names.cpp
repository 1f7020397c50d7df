// SPDX-License-Identifier: BSD-3-Clause
// See acl_names.h: the aclDataType and aclFormat enumerators a caller of the operation is likely to
// pass, with the spellings the tiling's sentences use.
#include "acl_names.h"

namespace rmsnorm_backward::atb {
namespace {

struct DtypeSpelling {
    aclDataType dtype;
    const char *name;
};
const DtypeSpelling kDtypes[] = {
    {ACL_FLOAT, "float32"}, {ACL_FLOAT16, "float16"}, {ACL_BF16, "bfloat16"}, {ACL_DOUBLE, "float64"},
    {ACL_INT8, "int8"},     {ACL_UINT8, "uint8"},     {ACL_INT16, "int16"},   {ACL_INT32, "int32"},
    {ACL_INT64, "int64"},   {ACL_BOOL, "bool"},
};

struct FormatSpelling {
    aclFormat format;
    const char *name;
};
const FormatSpelling kFormats[] = {
    {ACL_FORMAT_ND, "ND"}, {ACL_FORMAT_NCHW, "NCHW"}, {ACL_FORMAT_NHWC, "NHWC"}, {ACL_FORMAT_FRACTAL_NZ, "FRACTAL_NZ"},
};

}  // namespace

std::string DtypeName(aclDataType dtype)
{
    for (const DtypeSpelling &d : kDtypes) {
        if (d.dtype == dtype) return d.name;
    }
    return "aclDataType " + std::to_string(static_cast<int>(dtype));
}

aclDataType DtypeOf(const std::string &name)
{
    for (const DtypeSpelling &d : kDtypes) {
        if (name == d.name) return d.dtype;
    }
    return ACL_DT_UNDEFINED;
}

std::string FormatName(aclFormat format)
{
    for (const FormatSpelling &f : kFormats) {
        if (f.format == format) return f.name;
    }
    return "aclFormat " + std::to_string(static_cast<int>(format));
}

}  // namespace rmsnorm_backward::atb
