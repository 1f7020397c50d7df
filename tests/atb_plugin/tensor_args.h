// SPDX-License-Identifier: BSD-3-Clause
// Tensors on a test driver's command line or input line, shared by the drivers of tests/atb_plugin
// and tests/conformance: <name>=<dtype>:<d0>,<d1>,...[/<format>], for example x=float16:4,8 or
// x=float32:/NCHW (rank 0, format NCHW). dx and dgamma are outputs, every other name an input, in
// the order given. Words starting with "--" are options for the driver.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

struct TensorArg {
    std::string name, dtype, format = "ND";
    std::vector<int64_t> dims;

    bool output() const { return name == "dx" || name == "dgamma"; }
};

inline TensorArg ParseTensor(const std::string &word)
{
    TensorArg t;
    const size_t eq = word.find('='), colon = word.find(':', eq), slash = word.find('/', colon);
    t.name = word.substr(0, eq);
    t.dtype = word.substr(eq + 1, colon - eq - 1);
    if (slash != std::string::npos) t.format = word.substr(slash + 1);
    std::istringstream dims(word.substr(colon + 1, slash == std::string::npos ? std::string::npos : slash - colon - 1));
    for (std::string d; std::getline(dims, d, ',');) t.dims.push_back(std::stoll(d));
    return t;
}

// The tensors of a line, and its "--<key>=<value>" options in `options` (value "" for a bare --key).
inline std::vector<TensorArg> ParseLine(const std::vector<std::string> &words,
                                        std::vector<std::pair<std::string, std::string>> &options)
{
    std::vector<TensorArg> tensors;
    for (const std::string &w : words) {
        if (w.rfind("--", 0) == 0) {
            const size_t eq = w.find('=');
            options.emplace_back(w.substr(2, eq - 2), eq == std::string::npos ? "" : w.substr(eq + 1));
        } else if (!w.empty()) {
            tensors.push_back(ParseTensor(w));
        }
    }
    return tensors;
}
