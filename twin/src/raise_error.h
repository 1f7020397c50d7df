// SPDX-License-Identifier: BSD-3-Clause
// Raising the twin's own exceptions (python/ascendc_twin/errors.py) from the extension: the
// class is named by cause (InvalidInputError, EnvironmentSetupError, TwinRuleError, ...), so the
// C++ side picks the cause and Python keeps the one hierarchy.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

namespace twin::host {

[[noreturn]] inline void RaiseError(const char *error_class, const std::string &message)
{
    pybind11::object cls = pybind11::module_::import("ascendc_twin.errors").attr(error_class);
    PyErr_SetString(cls.ptr(), message.c_str());
    throw pybind11::error_already_set();
}

}  // namespace twin::host
