// SPDX-License-Identifier: BSD-3-Clause
// Prints, as JSON, every OpDef and graph prototype the linked generated files registered.
#include <cstdio>
#include <string>

#include "register/op_def_registry.h"

namespace {
const char *kDtype[] = {"DT_FLOAT", "DT_FLOAT16", "DT_BF16"};
const char *kFormat[] = {"FORMAT_ND", "FORMAT_NCHW"};

template <typename T, typename Name>
void List(const std::vector<T> &items, Name name)
{
    std::printf("[");
    for (size_t i = 0; i < items.size(); ++i) {
        std::printf("%s\"%s\"", i ? ", " : "", name(items[i]));
    }
    std::printf("]");
}

void Params(const char *key, const std::vector<ops::OpParamDef> &params)
{
    std::printf("\"%s\": [", key);
    for (size_t i = 0; i < params.size(); ++i) {
        const ops::OpParamDef &p = params[i];
        std::printf("%s{\"name\": \"%s\", \"required\": %s, \"auto_contiguous\": %s, \"dtypes\": ", i ? ", " : "",
                    p.name.c_str(), p.param_type == ops::REQUIRED ? "true" : "false", p.auto_contiguous ? "true" : "false");
        List(p.dtypes, [](ge::DataType d) { return kDtype[d]; });
        std::printf(", \"formats\": ");
        List(p.formats, [](ge::Format f) { return kFormat[f]; });
        std::printf(", \"unknown_shape_formats\": ");
        List(p.unknown_shape_formats, [](ge::Format f) { return kFormat[f]; });
        std::printf("}");
    }
    std::printf("]");
}

void Attrs(const std::vector<ops::OpAttrDef> &attrs)
{
    std::printf("\"attrs\": [");
    for (size_t i = 0; i < attrs.size(); ++i) {
        const ops::OpAttrDef &a = attrs[i];
        std::printf("%s{\"name\": \"%s\", \"optional\": %s, \"type\": \"%s\", \"default\": \"%s\"}", i ? ", " : "",
                    a.name.c_str(), a.attr_type == ops::OPTIONAL ? "true" : "false", a.type.c_str(), a.value.c_str());
    }
    std::printf("]");
}

void ProtoAttrs(const std::vector<std::vector<std::string>> &attrs)
{
    std::printf("\"attrs\": [");
    for (size_t i = 0; i < attrs.size(); ++i) {
        std::printf("%s{\"name\": \"%s\", \"type\": \"%s\", \"default\": \"%s\"}", i ? ", " : "",
                    attrs[i][0].c_str(), attrs[i][1].c_str(), attrs[i][2].c_str());
    }
    std::printf("]");
}

void Protos(const char *key, const std::vector<std::pair<std::string, ge::TensorType>> &params)
{
    std::printf("\"%s\": [", key);
    for (size_t i = 0; i < params.size(); ++i) {
        std::printf("%s{\"name\": \"%s\", \"types\": ", i ? ", " : "", params[i].first.c_str());
        List(params[i].second.types, [](ge::DataType d) { return kDtype[d]; });
        std::printf("}");
    }
    std::printf("]");
}
}  // namespace

int main()
{
    std::printf("{\"ops\": [");
    for (size_t i = 0; i < ops::Registry().size(); ++i) {
        ops::OpDef *op = ops::Registry()[i]();
        std::printf("%s{\"type\": \"%s\", \"tiling\": %s, \"infer_shape\": %s, \"infer_dtype\": %s, \"socs\": ", i ? ", " : "",
                    op->name_.c_str(), op->aicore_.has_tiling ? "true" : "false", op->infer_shape_ ? "true" : "false",
                    op->infer_dtype_ ? "true" : "false");
        List(op->aicore_.socs, [](const std::string &s) { return s.c_str(); });
        std::printf(", ");
        Params("inputs", op->inputs_);
        std::printf(", ");
        Params("outputs", op->outputs_);
        std::printf(", ");
        Attrs(op->attrs_);
        std::printf("}");
        delete op;
    }
    std::printf("], \"protos\": [");
    for (size_t i = 0; i < ge::Protos().size(); ++i) {
        const ge::ProtoReg &p = ge::Protos()[i];
        std::printf("%s{\"type\": \"%s\", ", i ? ", " : "", p.op.c_str());
        Protos("inputs", p.inputs);
        std::printf(", ");
        Protos("outputs", p.outputs);
        std::printf(", \"optional\": ");
        List(p.optional, [](const std::string &s) { return s.c_str(); });
        std::printf(", ");
        ProtoAttrs(p.attrs);
        std::printf("}");
    }
    std::printf("]}\n");
    return 0;
}
