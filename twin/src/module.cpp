// The extension module rmsnorm_backward._twin: the SoC table for Python, the kernel loader
// (loader.cpp) and the tiling bindings (bind_tiling.cpp, owned by the kernel side).
#include <pybind11/pybind11.h>

#include "twin/platform.h"
#include "twin/timeline.h"

namespace py = pybind11;

void BindLoader(py::module_ &m);
void BindTiling(py::module_ &m);

namespace {

py::list SocTable()
{
    py::list out;
    for (const twin::SocInfo &s : twin::kSocTable) {
        py::dict d;
        d["name"] = s.name;
        d["short_name"] = s.short_name;
        d["vector_cores"] = s.vector_cores;
        d["ub_bytes"] = s.ub_bytes;
        d["ub_reserved_bytes"] = s.ub_reserved_bytes;
        d["ub_usable_bytes"] = s.UbUsableBytes();
        d["l2_bytes"] = s.l2_bytes;
        d["sys_workspace_bytes"] = s.sys_workspace_bytes;
        d["clock_ghz"] = s.clock_ghz;
        d["hbm_gbps"] = s.hbm_gbps;
        d["ddr_bytes_per_cycle"] = s.ddr_bytes_per_cycle;
        d["l2_bytes_per_cycle"] = s.l2_bytes_per_cycle;
        d["ub_to_ddr_bytes_per_cycle"] = s.ub_to_ddr_bytes_per_cycle;
        out.append(d);
    }
    return out;
}

// The performance model's own constants (twin/timeline.h), one dict per SoC, and their sources.
py::list ModelTable()
{
    py::list out;
    for (const twin::ModelConstants &row : twin::kModelTable) {
        py::dict d;
        d["soc"] = row.soc;
        for (const twin::ModelField &f : twin::kModelFields) {
            d[f.name] = row.*f.member;
        }
        out.append(d);
    }
    return out;
}

py::dict ModelSources()
{
    py::dict d;
    for (const twin::ModelField &f : twin::kModelFields) {
        d[f.name] = f.source;
    }
    return d;
}

}  // namespace

PYBIND11_MODULE(_twin, m)
{
    m.doc() = "CPU twin of the Ascend C API: SoC table, kernel loader, tiling";
    m.def("soc_table", &SocTable, "The supported SoCs (twin/include/twin/platform.h), one dict each.");
    m.def("model_table", &ModelTable, "The performance model's constants per SoC (twin/timeline.h).");
    m.def("model_sources", &ModelSources, "Where each performance model constant comes from.");
    m.attr("ub_block_bytes") = twin::kUbBlockBytes;
    m.attr("repeat_bytes") = twin::kRepeatBytes;
    m.attr("max_repeat") = twin::kMaxRepeat;
    BindLoader(m);
    BindTiling(m);
}
