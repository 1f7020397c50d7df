// SPDX-License-Identifier: BSD-3-Clause
// Test double of the graph prototype macros (REG_OP ... OP_END_FACTORY_REG) and the ge enums the
// generated files name; records each prototype's inputs, outputs and attributes.
#pragma once
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace ge {
using graphStatus = unsigned int;
enum DataType { DT_FLOAT, DT_FLOAT16, DT_BF16 };
enum Format { FORMAT_ND, FORMAT_NCHW };

struct TensorType {
    TensorType(std::initializer_list<DataType> t) : types(t) {}
    std::vector<DataType> types;
};

struct ProtoReg {
    std::string op;
    std::vector<std::pair<std::string, TensorType>> inputs, outputs;
    std::vector<std::vector<std::string>> attrs;  // name, type, default as written
    std::vector<std::string> optional;            // the optional inputs' names
    ProtoReg &Input(const char *n, TensorType t) { inputs.push_back({n, t}); return *this; }
    ProtoReg &OptionalInput(const char *n, TensorType t) { optional.push_back(n); return Input(n, t); }
    ProtoReg &Output(const char *n, TensorType t) { outputs.push_back({n, t}); return *this; }
    ProtoReg &Attr(const char *n, const char *type, const char *value) { attrs.push_back({n, type, value}); return *this; }
    ProtoReg &End() { return *this; }
};
inline std::vector<ProtoReg> &Protos()
{
    static std::vector<ProtoReg> p;
    return p;
}
struct ProtoEnd {
    explicit ProtoEnd(ProtoReg &r) { Protos().push_back(r); }
};
}  // namespace ge

#define REG_OP(T) static ::ge::ProtoReg kProto##T = ::ge::ProtoReg{#T}
#define INPUT(n, t) Input(#n, t)
#define OPTIONAL_INPUT(n, t) OptionalInput(#n, t)
#define OUTPUT(n, t) Output(#n, t)
#define ATTR(n, type, value) Attr(#n, #type, #value)
#define OP_END_FACTORY_REG(T) End(); static ::ge::ProtoEnd kProtoEnd##T(kProto##T);
