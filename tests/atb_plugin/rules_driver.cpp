// SPDX-License-Identifier: BSD-3-Clause
// Runs the plain rules of the ATB operation (framework/atb_plugin/operation_rules.h) on the CPU, no
// ACL or ATB header: one case per input line, one answer per output line.
//   infer <tensors>            InferOutputs on the inputs: "ok <dx> <dgamma>" or "<fault> <message>"
//   check <tensors>            CheckOutputs on inputs and outputs: "ok" or "<fault> <message>"
//   rsv <b0> ... <b7>          CheckReserved on these bytes: "ok" or "<fault> <message>"
// Tensors as in tensor_args.h; an output is printed as <dtype>[<d0>,...]/<format>.
#include <iostream>
#include <sstream>

#include "operation_rules.h"
#include "tensor_args.h"

namespace {

using rmsnorm_backward::atb::Fault;
using rmsnorm_backward::atb::TensorSpec;
using rmsnorm_backward::atb::Verdict;

const char *FaultName(Fault f)
{
    switch (f) {
        case Fault::kNone: return "ok";
        case Fault::kParam: return "param";
        case Fault::kInputCount: return "input_count";
        case Fault::kOutputCount: return "output_count";
        case Fault::kDtype: return "dtype";
        case Fault::kFormat: return "format";
        case Fault::kShape: return "shape";
    }
    return "?";
}

std::string Text(const TensorSpec &t)
{
    std::string text = t.dtype + "[";
    for (size_t i = 0; i < t.shape.size(); ++i) text += (i ? "," : "") + std::to_string(t.shape[i]);
    return text + "]/" + t.format;
}

std::string Answer(const Verdict &v, const std::string &ok)
{
    return v.ok() ? "ok" + ok : std::string(FaultName(v.fault)) + " " + v.message;
}

}  // namespace

int main()
{
    for (std::string line; std::getline(std::cin, line);) {
        std::istringstream in(line);
        std::string command;
        in >> command;
        std::vector<std::string> words;
        for (std::string w; in >> w;) words.push_back(w);
        if (command == "rsv") {
            std::vector<uint8_t> bytes;
            for (const std::string &w : words) bytes.push_back(static_cast<uint8_t>(std::stoi(w)));
            std::cout << Answer(rmsnorm_backward::atb::CheckReserved(bytes.data(), bytes.size()), "") << "\n";
            continue;
        }
        std::vector<std::pair<std::string, std::string>> options;
        std::vector<TensorSpec> inputs, outputs;
        for (const TensorArg &t : ParseLine(words, options)) {
            (t.output() ? outputs : inputs).push_back({t.dtype, t.format, t.dims});
        }
        if (command == "infer") {
            std::vector<TensorSpec> inferred;
            const Verdict v = rmsnorm_backward::atb::InferOutputs(inputs, inferred);
            std::string ok;
            for (const TensorSpec &t : inferred) ok += " " + Text(t);
            std::cout << Answer(v, ok) << "\n";
        } else {
            std::cout << Answer(rmsnorm_backward::atb::CheckOutputs(inputs, outputs), "") << "\n";
        }
    }
    return 0;
}
