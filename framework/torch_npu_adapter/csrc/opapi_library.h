// SPDX-License-Identifier: BSD-3-Clause
// Finds the aclnn library of an installed custom operator package (libcust_opapi.so) and one
// operator's two entry points in it. Plain POSIX, no torch or CANN header, so the search can be
// built and tested on any machine.
#pragma once
#include <string>
#include <vector>

namespace rmsnorm_backward::npu {

// The files to try, in CANN's order of precedence:
//  1. each entry of ASCEND_CUSTOM_OPP_PATH (colon-separated; the package's set_env.bash prepends its
//     own): a package directory <path>/vendors/<vendor> holds op_api/lib/libcust_opapi.so, a
//     library directory <path>/op_api/lib holds the file itself;
//  2. the default install location <ASCEND_OPP_PATH>/vendors/<vendor>/op_api/lib/libcust_opapi.so,
//     with ASCEND_OPP_PATH defaulting to <ASCEND_HOME_PATH>/opp.
// Null environment values count as unset.
std::vector<std::string> CandidateLibraries(const char *custom_opp_path, const char *opp_path,
                                            const char *ascend_home_path, const std::string &vendor);

struct OpApi {
    void *get_workspace_size = nullptr;  // <aclnn_name>GetWorkspaceSize
    void *run = nullptr;                 // <aclnn_name>
    std::string library;                 // the file both come from
};

// The first existing candidate that exports both entry points (another package's library is skipped).
// Throws std::runtime_error naming the operator and every candidate with the reason it was skipped.
OpApi FindOpApi(const std::vector<std::string> &candidates, const std::string &aclnn_name);

}  // namespace rmsnorm_backward::npu
