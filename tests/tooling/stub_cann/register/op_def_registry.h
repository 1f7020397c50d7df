// SPDX-License-Identifier: BSD-3-Clause
// Test double of the OpDef registration API (written from its documented call shapes, no CANN code):
// records what a generated registration declares so a test can print it and compare with op_def.
#pragma once
#include <functional>
#include <initializer_list>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/operator_reg.h"

namespace gert {
class TilingContext;
class InferShapeContext;
class InferDataTypeContext;
}  // namespace gert

namespace ops {
enum ParamType { REQUIRED, OPTIONAL, DYNAMIC };

struct OpParamDef {
    std::string name;
    int param_type = -1;
    std::vector<ge::DataType> dtypes;
    std::vector<ge::Format> formats, unknown_shape_formats;
    bool auto_contiguous = false;
    OpParamDef &ParamType(int t) { param_type = t; return *this; }
    OpParamDef &DataType(std::vector<ge::DataType> d) { dtypes = d; return *this; }
    OpParamDef &Format(std::vector<ge::Format> f) { formats = f; return *this; }
    OpParamDef &UnknownShapeFormat(std::vector<ge::Format> f) { unknown_shape_formats = f; return *this; }
    OpParamDef &AutoContiguous() { auto_contiguous = true; return *this; }
};

struct OpAttrDef {
    std::string name;
    int attr_type = -1;
    std::string type, value;  // the setter called and its argument, printed
    OpAttrDef &AttrType(int t) { attr_type = t; return *this; }
    OpAttrDef &Float(float v) { type = "Float", value = std::to_string(v); return *this; }
    OpAttrDef &Int(int64_t v) { type = "Int", value = std::to_string(v); return *this; }
    OpAttrDef &Bool(bool v) { type = "Bool", value = v ? "true" : "false"; return *this; }
};

struct OpAICoreDef {
    std::vector<std::string> socs;
    bool has_tiling = false;
    OpAICoreDef &SetTiling(ge::graphStatus (*)(gert::TilingContext *)) { has_tiling = true; return *this; }
    OpAICoreDef &AddConfig(const char *soc) { socs.push_back(soc); return *this; }
};

class OpDef {
public:
    explicit OpDef(const char *name) : name_(name) {}
    OpParamDef &Input(const char *n) { inputs_.push_back({n}); return inputs_.back(); }
    OpParamDef &Output(const char *n) { outputs_.push_back({n}); return outputs_.back(); }
    OpAttrDef &Attr(const char *n) { attrs_.push_back({n}); return attrs_.back(); }
    OpDef &SetInferShape(ge::graphStatus (*)(gert::InferShapeContext *)) { infer_shape_ = true; return *this; }
    OpDef &SetInferDataType(ge::graphStatus (*)(gert::InferDataTypeContext *)) { infer_dtype_ = true; return *this; }
    OpAICoreDef &AICore() { return aicore_; }

    std::string name_;
    std::vector<OpParamDef> inputs_, outputs_;
    std::vector<OpAttrDef> attrs_;
    bool infer_shape_ = false, infer_dtype_ = false;
    OpAICoreDef aicore_;
};

inline std::vector<std::function<OpDef *()>> &Registry()
{
    static std::vector<std::function<OpDef *()>> r;
    return r;
}
}  // namespace ops

#define OP_ADD(T) \
    static const bool kRegistered##T = (::ops::Registry().push_back([] { return new T(#T); }), true)
