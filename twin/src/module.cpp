// SPDX-License-Identifier: BSD-3-Clause
// The extension module ascendc_twin._twin: the SoC table and the performance model's constants for
// Python, and the kernel loader (loader.cpp).
#include <pybind11/pybind11.h>

#include "twin/platform.h"
#include "twin/model_constants.h"

namespace py = pybind11;

void BindLoader(py::module_ &m);

namespace {

py::list SocTable()
{
    py::list out;
    for (const twin::SocInfo &s : twin::kSocTable) {
        py::dict d;
        twin::VisitFacts(s, [&d](const char *name, const auto &value) { d[name] = value; });
        out.append(d);
    }
    return out;
}

// The performance model's own constants (twin/model_constants.h), one dict per SoC, and their sources.
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
    m.doc() = "CPU twin of the Ascend C API: SoC table, model constants, kernel loader";
    m.def("soc_table", &SocTable, "The supported SoCs (include/twin/platform.h), one dict each.");
    m.def("model_table", &ModelTable, "The performance model's constants per SoC (include/twin/model_constants.h).");
    m.def("model_sources", &ModelSources, "Where each performance model constant comes from.");
    m.attr("ub_block_bytes") = twin::kUbBlockBytes;
    m.attr("repeat_bytes") = twin::kRepeatBytes;
    m.attr("max_repeat") = twin::kMaxRepeat;
    BindLoader(m);
}
