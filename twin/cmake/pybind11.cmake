# SPDX-License-Identifier: BSD-3-Clause
# pybind11 for an extension module: found through pip's build environment, or outside pip
# (cmake --preset cpu) through the Python that has pybind11. Included by the twin's build and by a
# project that builds its own extension beside the twin's.
if(NOT TARGET pybind11::module)
    find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
    if(pybind11_DIR AND NOT EXISTS "${pybind11_DIR}")  # cached by a build environment that is gone
        unset(pybind11_DIR CACHE)
    endif()
    if(NOT pybind11_DIR)
        execute_process(COMMAND "${Python_EXECUTABLE}" -m pybind11 --cmakedir
                        OUTPUT_VARIABLE pybind11_DIR OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
    find_package(pybind11 CONFIG REQUIRED)
endif()
