// SPDX-License-Identifier: BSD-3-Clause
// The extension module rmsnorm_backward._tiling: the Python binding of the plain tiling (op_host/tiling),
// compute_tiling(...) -> dict. The same C++ runs in CANN's TilingFunc, so Python sees the operator's
// validation rules and tiling choices unchanged. The platform comes from the twin's PlatformAscendC,
// as on an NPU it comes from CANN's.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "rms_norm_backward_tiling_fields.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/reference_platform.h"
#include "tiling/rms_norm_backward_tiling.h"

namespace py = pybind11;

namespace {

// The package's TilingError (python/rmsnorm_backward/errors.py, an InvalidInputError) with the rule's
// sentence, its kind ("shape", "dtype", "attr", "platform") and the tensor it names.
[[noreturn]] void Raise(const rmsnorm_backward::tiling::TilingError &error)
{
    py::object cls = py::module_::import("rmsnorm_backward.errors").attr("TilingError");
    py::object raised = cls(error.message, rmsnorm_backward::tiling::TilingFaultName(error.fault), error.tensor);
    PyErr_SetObject(cls.ptr(), raised.ptr());
    throw py::error_already_set();
}

// The twin's platform for `soc`, as CANN's TilingFunc gets it from PlatformAscendC; an unknown name
// is the caller's input error.
rmsnorm_backward::tiling::PlatformFacts Platform(const std::string &soc)
{
    const twin::SocInfo *info = twin::FindSoc(soc.c_str());
    if (info == nullptr) {
        std::string names;
        for (const twin::SocInfo &s : twin::kSocTable) names += std::string(names.empty() ? "" : ", ") + s.name;
        Raise({rmsnorm_backward::tiling::TilingFault::kPlatform, "soc", "soc must be one of " + names + " (got " + soc + ")."});
    }
    fe::PlatFormInfos infos(*info);
    const platform_ascendc::PlatformAscendC platform(&infos);
    return rmsnorm_backward::tiling::PlatformFactsOf(platform, platform_ascendc::CoreMemType::UB, soc);
}

py::dict ComputeTiling(std::vector<int64_t> dy_shape, std::vector<int64_t> x_shape, std::vector<int64_t> rstd_shape,
                       std::optional<std::vector<int64_t>> gamma_shape, std::string dy_dtype, std::string x_dtype,
                       std::string rstd_dtype, std::string gamma_dtype, float gamma_offset, const std::string &soc,
                       uint32_t block_dim, std::optional<std::vector<int64_t>> dres_shape, std::string dres_dtype)
{
    if (dres_shape.has_value() == dres_dtype.empty()) {
        Raise({rmsnorm_backward::tiling::TilingFault::kShape, "dres",
               "dres_shape and dres_dtype go together: give both for the fused residual form, or neither."});
    }
    rmsnorm_backward::tiling::TilingInput in;
    in.dy_shape = std::move(dy_shape);
    in.x_shape = std::move(x_shape);
    in.rstd_shape = std::move(rstd_shape);
    in.has_gamma = gamma_shape.has_value();
    in.gamma_shape = gamma_shape.value_or(std::vector<int64_t>{});
    in.dy_dtype = std::move(dy_dtype);
    in.x_dtype = std::move(x_dtype);
    in.rstd_dtype = std::move(rstd_dtype);
    in.gamma_dtype = std::move(gamma_dtype);
    in.gamma_offset = gamma_offset;
    in.has_dres = dres_shape.has_value();
    in.dres_shape = dres_shape.value_or(std::vector<int64_t>{});
    in.dres_dtype = std::move(dres_dtype);
    in.platform = Platform(soc);
    in.block_dim_cap = block_dim;
    rmsnorm_backward::tiling::TilingResult out;
    rmsnorm_backward::tiling::TilingError error;
    if (!rmsnorm_backward::tiling::ComputeTiling(in, out, error)) Raise(error);
    py::dict d;
    d["tiling"] = py::bytes(reinterpret_cast<const char *>(&out.data), sizeof(out.data));
    d["block_dim"] = out.block_dim;
    d["tiling_key"] = out.tiling_key;
    d["path"] = rmsnorm_backward::tiling::TilingPathName(out.tiling_key);
    d["workspace_bytes"] = out.workspace_bytes;
    d["user_workspace_bytes"] = out.user_workspace_bytes;
    d["min_bytes"] = out.min_bytes;
    d["ub_bytes"] = out.ub_bytes;
    d["fields"] = RmsNormBackwardTilingDataFields(out.data);
    return d;
}

// The tiling's rules on the outputs an aclnn caller allocates (CheckOutputs, which CANN's TilingFunc
// runs after the inputs' rules): nothing, or TilingError.
void CheckOutputs(std::vector<int64_t> x_shape, std::string x_dtype, std::optional<std::vector<int64_t>> gamma_shape,
                  const std::vector<int64_t> &dx_shape, const std::string &dx_dtype,
                  const std::vector<int64_t> &dgamma_shape, const std::string &dgamma_dtype)
{
    rmsnorm_backward::tiling::TilingInput in;
    in.x_shape = std::move(x_shape);
    in.x_dtype = std::move(x_dtype);
    in.has_gamma = gamma_shape.has_value();
    in.gamma_shape = gamma_shape.value_or(std::vector<int64_t>{});
    const rmsnorm_backward::tiling::TilingError error =
        rmsnorm_backward::tiling::CheckOutputs(in, dx_shape, dx_dtype, dgamma_shape, dgamma_dtype);
    if (!error.ok()) Raise(error);
}

}  // namespace

PYBIND11_MODULE(_tiling, m)
{
    m.doc() = "The tiling of RmsNormBackward (op_host/tiling): its input and output rules and its choices";
    m.attr("REFERENCE_SOC") = rmsnorm_backward::tiling::reference_platform::kSocName;
    m.def("check_outputs", &CheckOutputs, py::arg("x_shape"), py::arg("x_dtype"), py::arg("gamma_shape"),
          py::arg("dx_shape"), py::arg("dx_dtype"), py::arg("dgamma_shape"), py::arg("dgamma_dtype"),
          "The tiling's rules on dx and dgamma as a caller allocates them (gamma_shape None: no gamma): "
          "returns None, or raises TilingError (an InvalidInputError) naming the output and the rule.");
    m.def("compute_tiling", &ComputeTiling, py::arg("dy_shape"), py::arg("x_shape"), py::arg("rstd_shape"),
          py::arg("gamma_shape"), py::arg("dy_dtype"), py::arg("x_dtype"), py::arg("rstd_dtype"),
          py::arg("gamma_dtype"), py::arg("gamma_offset") = 0.0f, py::arg("soc") = rmsnorm_backward::tiling::reference_platform::kSocName, py::arg("block_dim") = 0,
          py::arg("dres_shape") = py::none(), py::arg("dres_dtype") = "",
          "Validates the inputs of RmsNormBackward and computes its tiling (op_host/tiling): a dict with the "
          "tiling bytes, block_dim, tiling_key, path, workspace_bytes, min_bytes, ub_bytes (the UB the launch holds at its peak) and the tiling fields. block_dim "
          "caps the cores (0: as many as useful); gamma_offset is the attribute, as a float32; gamma_shape None: no gamma; dres_shape None: no dres. Bad inputs raise TilingError (an InvalidInputError) with the rule's kind, the tensor and one sentence.");
}
