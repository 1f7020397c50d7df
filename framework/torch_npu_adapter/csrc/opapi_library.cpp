// SPDX-License-Identifier: BSD-3-Clause
#include "opapi_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <sstream>
#include <stdexcept>

namespace rmsnorm_backward::npu {
namespace {

constexpr const char *kLibrary = "libcust_opapi.so";

bool IsSet(const char *value) { return value != nullptr && value[0] != '\0'; }

bool IsFile(const std::string &path)
{
    struct stat st{};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Join(std::string dir, const std::string &tail)
{
    while (dir.size() > 1 && dir.back() == '/') {
        dir.pop_back();
    }
    return dir + "/" + tail;
}

}  // namespace

std::vector<std::string> CandidateLibraries(const char *custom_opp_path, const char *opp_path,
                                            const char *ascend_home_path, const std::string &vendor)
{
    std::vector<std::string> out;
    if (IsSet(custom_opp_path)) {
        std::stringstream entries(custom_opp_path);
        std::string entry;
        while (std::getline(entries, entry, ':')) {
            if (entry.empty()) {
                continue;
            }
            out.push_back(Join(entry, std::string("op_api/lib/") + kLibrary));
            out.push_back(Join(entry, kLibrary));
        }
    }
    std::string opp = IsSet(opp_path) ? opp_path : IsSet(ascend_home_path) ? Join(ascend_home_path, "opp") : "";
    if (!opp.empty()) {
        out.push_back(Join(opp, "vendors/" + vendor + "/op_api/lib/" + kLibrary));
    }
    return out;
}

OpApi FindOpApi(const std::vector<std::string> &candidates, const std::string &aclnn_name)
{
    const std::string workspace_name = aclnn_name + "GetWorkspaceSize";
    std::ostringstream tried;
    for (const std::string &path : candidates) {
        if (!IsFile(path)) {
            tried << "\n  " << path << ": no such file";
            continue;
        }
        // RTLD_GLOBAL: the library's kernels register themselves with CANN's runtime by name.
        void *handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL);
        if (handle == nullptr) {
            const char *why = dlerror();
            tried << "\n  " << path << ": dlopen failed (" << (why ? why : "unknown") << ")";
            continue;
        }
        OpApi api{dlsym(handle, workspace_name.c_str()), dlsym(handle, aclnn_name.c_str()), path};
        if (api.get_workspace_size != nullptr && api.run != nullptr) {
            return api;
        }
        tried << "\n  " << path << ": does not export " << workspace_name << " and " << aclnn_name;
        dlclose(handle);
    }
    if (candidates.empty()) {
        tried << "\n  (none: set ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH or ASCEND_HOME_PATH)";
    }
    throw std::runtime_error(aclnn_name + " was not found in an installed custom operator package; install "
                             "the package (its .run file) and source its set_env.bash. Tried:" + tried.str());
}

}  // namespace rmsnorm_backward::npu
