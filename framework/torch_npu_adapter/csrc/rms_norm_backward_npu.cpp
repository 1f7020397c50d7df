// SPDX-License-Identifier: BSD-3-Clause
// The NPU kernel of torch.ops.rmsnorm_backward.rms_norm_backward: aclnnRmsNormBackward of the
// installed custom operator package, launched on the current NPU stream through torch_npu's
// OpCommand (the custom-handler form the torch_npu custom-op samples use for aclnn operators).
// Built by ../setup.py only where torch_npu and CANN are installed; the Python package registers
// rms_norm_backward() below as the operator's PrivateUse1 kernel.
#include <torch/extension.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn_rms_norm_backward.h"  // generated from op_def (op_host/op_api): the entry points' types
#include "opapi_library.h"
#include "rms_norm_backward_dtypes.h"  // generated from op_def (op_host): the dtype table
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

// The package's vendor directory comes from op_def/rms_norm_backward.toml through setup.py.
#ifndef RMSNB_VENDOR
#error "build with setup.py: it defines RMSNB_VENDOR from op_def"
#endif
#define RMSNB_STR2(s) #s
#define RMSNB_STR(s) RMSNB_STR2(s)
#define RMSNB_ACLNN_NAME RMSNB_STR(aclnnRmsNormBackward)

namespace rmsnorm_backward::npu {
namespace {

// Looked up at run time in the installed package, so only their types are taken from the header.
using GetWorkspaceSizeFn = decltype(&aclnnRmsNormBackwardGetWorkspaceSize);
using RunFn = decltype(&aclnnRmsNormBackward);

const OpApi &Api()
{
    static const OpApi api = [] {
        try {
            return FindOpApi(CandidateLibraries(std::getenv("ASCEND_CUSTOM_OPP_PATH"), std::getenv("ASCEND_OPP_PATH"),
                                                std::getenv("ASCEND_HOME_PATH"), RMSNB_STR(RMSNB_VENDOR)),
                             RMSNB_ACLNN_NAME);
        } catch (const std::runtime_error &e) {
            TORCH_CHECK(false, e.what());
        }
        return OpApi{};
    }();
    return api;
}

// The allowed dtypes come from op_def's dtype table (rms_norm_backward_dtypes.h, generated).
aclDataType AclDtype(const at::Tensor &t, const char *name)
{
#define RMSNB_ACL_OF(dtype_name, ge_type, acl_type, at_type) case at::ScalarType::at_type: return acl_type;
#define RMSNB_LISTED(dtype_name, ge_type, acl_type, at_type) " " dtype_name
    switch (t.scalar_type()) {
        RMSNB_DTYPES(RMSNB_ACL_OF)
        default:
            TORCH_CHECK(false, name, " has dtype ", t.scalar_type(),
                        "; it must be one of:" RMSNB_DTYPES(RMSNB_LISTED));
    }
#undef RMSNB_ACL_OF
#undef RMSNB_LISTED
    return ACL_DT_UNDEFINED;
}

// A dense tensor described as itself: view = storage = its sizes, starting at its first element.
aclTensor *AclTensor(const at::Tensor &t, const char *name)
{
    const auto sizes = t.sizes();
    const auto strides = t.strides();
    aclTensor *out = aclCreateTensor(sizes.data(), sizes.size(), AclDtype(t, name), strides.data(), 0, ACL_FORMAT_ND,
                                     sizes.data(), sizes.size(), t.data_ptr());
    TORCH_CHECK(out != nullptr, "aclCreateTensor failed for ", name);
    return out;
}

void CheckDevice(const at::Tensor &t, const char *name, const at::Tensor &x)
{
    TORCH_CHECK(t.device() == x.device(), name, " is on ", t.device(), " but x is on ", x.device(),
                "; dy, x, rstd and gamma must be on one device");
}

}  // namespace

// gamma absent (None): aclnn gets a null gammaOptional and an empty dgamma, which it leaves alone;
// dres absent: a null dresOptional.
std::tuple<at::Tensor, at::Tensor> RmsNormBackward(const at::Tensor &dy_in, const at::Tensor &x_in,
                                                   const at::Tensor &rstd_in,
                                                   const c10::optional<at::Tensor> &gamma_in,
                                                   const c10::optional<at::Tensor> &dres_in, double gamma_offset)
{
    TORCH_CHECK(x_in.device().type() == c10::DeviceType::PrivateUse1, "x is on ", x_in.device(),
                "; the NPU adapter takes NPU tensors");
    CheckDevice(dy_in, "dy", x_in);
    CheckDevice(rstd_in, "rstd", x_in);
    const bool has_gamma = gamma_in.has_value(), has_dres = dres_in.has_value();
    if (has_gamma) {
        CheckDevice(*gamma_in, "gamma", x_in);
    }
    if (has_dres) {
        CheckDevice(*dres_in, "dres", x_in);
    }
    // The kernel reads each tensor as one dense buffer: strided or expanded views are copied here.
    at::Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), rstd = rstd_in.contiguous();
    at::Tensor gamma = has_gamma ? gamma_in->contiguous() : at::Tensor();
    at::Tensor dres = has_dres ? dres_in->contiguous() : at::Tensor();
    at::Tensor dx = at::empty(x.sizes(), x.options());
    at::Tensor dgamma = has_gamma ? at::empty(gamma.sizes(), gamma.options().dtype(at::kFloat))
                                  : at::empty({0}, x.options().dtype(at::kFloat));

    const OpApi &api = Api();
    // Every dtype checked before any aclTensor exists, so a bad one leaks none.
    AclDtype(dy, "dy"), AclDtype(x, "x"), AclDtype(rstd, "rstd");
    if (has_gamma) {
        AclDtype(gamma, "gamma");
    }
    if (has_dres) {
        AclDtype(dres, "dres");
    }
    aclTensor *args[] = {AclTensor(dy, "dy"), AclTensor(x, "x"), AclTensor(rstd, "rstd"),
                         has_gamma ? AclTensor(gamma, "gamma") : nullptr, has_dres ? AclTensor(dres, "dres") : nullptr,
                         AclTensor(dx, "dx"), AclTensor(dgamma, "dgamma")};
    uint64_t workspace_size = 0;
    aclOpExecutor *executor = nullptr;
    const aclnnStatus status = reinterpret_cast<GetWorkspaceSizeFn>(api.get_workspace_size)(
        args[0], args[1], args[2], args[3], args[4], gamma_offset, args[5], args[6], &workspace_size, &executor);
    if (status != 0) {
        for (aclTensor *a : args) {
            if (a != nullptr) aclDestroyTensor(a);
        }
        TORCH_CHECK(false, RMSNB_ACLNN_NAME "GetWorkspaceSize failed (status ", status, "): ", aclGetRecentErrMsg());
    }
    at::Tensor workspace = at::empty({static_cast<int64_t>(workspace_size)}, x.options().dtype(at::kByte));

    const aclrtStream stream = c10_npu::getCurrentNPUStream().stream(false);
    // The handler may run later on torch_npu's task queue: it keeps every tensor it touches alive.
    auto launch = [run = api.run, args, workspace, workspace_size, executor, stream,
                   held = std::vector<at::Tensor>{dy, x, rstd, gamma, dres, dx, dgamma}]() -> int {
        const aclnnStatus run_status = reinterpret_cast<RunFn>(run)(
            workspace_size != 0 ? workspace.data_ptr() : nullptr, workspace_size, executor, stream);
        for (aclTensor *a : args) {
            if (a != nullptr) aclDestroyTensor(a);
        }
        TORCH_CHECK(run_status == 0, RMSNB_ACLNN_NAME " failed (status ", run_status, "): ", aclGetRecentErrMsg());
        return run_status;
    };
    at_npu::native::OpCommand cmd;
    cmd.Name(RMSNB_ACLNN_NAME);
    cmd.SetCustomHandler(launch);
    cmd.Run();
    return {dx, dgamma};
}

}  // namespace rmsnorm_backward::npu

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.doc() = "NPU kernel of torch.ops.rmsnorm_backward.rms_norm_backward (aclnnRmsNormBackward)";
    m.def("rms_norm_backward", &rmsnorm_backward::npu::RmsNormBackward, "(dx, dgamma) on the NPU",
          pybind11::arg("dy"), pybind11::arg("x"), pybind11::arg("rstd"), pybind11::arg("gamma") = pybind11::none(),
          pybind11::arg("dres") = pybind11::none(),
          pybind11::arg("gamma_offset") = 0.0);
    m.def("library", [] { return rmsnorm_backward::npu::Api().library; },
          "the libcust_opapi.so that aclnnRmsNormBackward is taken from");
}
