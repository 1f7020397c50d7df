# SPDX-License-Identifier: BSD-3-Clause
# The NPU build, switched on by an NPU preset (CMakePresets.json, generated from op_def): those set
# ASCEND_COMPUTE_UNIT (the SoC family) and SOC_VERSION (its chip), and then CANN must be present.
# Without ASCEND_COMPUTE_UNIT (the cpu preset, pip builds) this file does nothing.
#
# It is the msopgen project flow written against the build modules CANN installs for custom
# operator projects (find_package(ASC), compiler/tikcpp/ascendc_kernel_cmake), so the steps are
# CANN's own and stay in step with the installed toolkit:
#   opbuild        the op_host sources compiled into one library that CANN's op_build reads for the
#                  OpDef, generating the aclnn sources, the op proto and the op info per SoC
#   cust_opapi     libcust_opapi.so: the aclnn entry points (examples/aclnn and the adapter load it)
#   cust_op_proto  libcust_opsproto_rt2.0.so: the graph-mode prototype
#   cust_optiling  libcust_opmaster_rt2.0.so: OpDef, TilingFunc, InferShape, linked with
#                  rt2_registry as a whole archive so CANN's loader finds the registered functions
#   kernels        per SoC family, the binary kernels (.o + .json per tiling key) and their index,
#                  from the Ascend C kernel compile step and the binary config it writes
#   install        packages/vendors/<vendor>/{op_api,op_impl/ai_core/tbe/...,op_proto,framework}
#   package        scripts/package.sh -> build_out/custom_opp_<os>_<arch>.run (makeself)
# CANN's order: `--target binary` (the kernels), then `all`, then `--target package`. Besides,
# `kernel_device_check` (kernel_device_check/, not in `all`) compiles the kernel for the chip through
# CANN's ascendc.cmake, which picks the AI core arch from SOC_VERSION (dav-c220 for A2/A3).
if(NOT ASCEND_COMPUTE_UNIT)
    return()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/npu_socs.cmake")
if(NOT ASCEND_COMPUTE_UNIT IN_LIST NPU_SOC_FAMILIES)
    list(JOIN NPU_SOC_FAMILIES ", " _families)
    message(FATAL_ERROR "ASCEND_COMPUTE_UNIT ${ASCEND_COMPUTE_UNIT} is not a SoC family of ${NPU_OP_TYPE}: "
                        "op_def/${NPU_OP_FILE}.toml lists ${_families} (one preset each).")
endif()
set(_chip "${NPU_SOC_CHIP_${ASCEND_COMPUTE_UNIT}}")
if(SOC_VERSION AND NOT SOC_VERSION STREQUAL _chip)
    message(FATAL_ERROR "SOC_VERSION ${SOC_VERSION} is not the chip of ${ASCEND_COMPUTE_UNIT}: "
                        "op_def/${NPU_OP_FILE}.toml builds ${ASCEND_COMPUTE_UNIT} for ${_chip}.")
endif()
set(SOC_VERSION "${_chip}")
if(NOT vendor_name)
    set(vendor_name "${NPU_OP_VENDOR}")
endif()

# CANN: the operator build modules are what this file needs from it.
set(_asc_modules "compiler/tikcpp/ascendc_kernel_cmake")
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/cann_default_paths.txt" _cann_defaults REGEX "^[^#]")
set(_cann_looked "")
set(CANN_ROOT "")
foreach(_cand IN ITEMS "${ASCEND_CANN_PACKAGE_PATH}" "$ENV{ASCEND_HOME_PATH}" ${_cann_defaults})
    if(_cand STREQUAL "" OR _cand IN_LIST _cann_looked)
        continue()
    endif()
    list(APPEND _cann_looked "${_cand}")
    if(EXISTS "${_cand}/${_asc_modules}/asc-config.cmake")
        set(CANN_ROOT "${_cand}")
        break()
    endif()
endforeach()
if(NOT CANN_ROOT)
    list(JOIN _cann_looked ", " _cann_looked_text)
    message(FATAL_ERROR
        "The ${ASCEND_COMPUTE_UNIT} preset needs the CANN toolkit, but no ${_asc_modules}/asc-config.cmake was "
        "found in ${_cann_looked_text} (set ASCEND_HOME_PATH by sourcing CANN's set_env.sh, or use --preset cpu).")
endif()
message(STATUS "CANN: ${CANN_ROOT} for ${ASCEND_COMPUTE_UNIT} (${SOC_VERSION}), vendor ${vendor_name}")
# CANN's modules read the toolkit root from both of these.
set(ASCEND_CANN_PACKAGE_PATH "${CANN_ROOT}" CACHE PATH "CANN toolkit root" FORCE)
set(ENV{ASCEND_HOME_PATH} "${CANN_ROOT}")
if(NOT ASCEND_PYTHON_EXECUTABLE)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(ASCEND_PYTHON_EXECUTABLE "${Python3_EXECUTABLE}" CACHE STRING "Python for CANN's build scripts")
endif()
find_package(ASC REQUIRED HINTS "${CANN_ROOT}/${_asc_modules}")

set(_src "${CMAKE_CURRENT_SOURCE_DIR}")
# The package is assembled by scripts/package.sh (makeself) from what `cmake --install` lays out, so
# CANN's own CPack step is off.
npu_op_package(${vendor_name} TYPE RUN
    CONFIG ENABLE_SOURCE_PACKAGE True ENABLE_BINARY_PACKAGE True ENABLE_CPACK False
           INSTALL_PATH "${CMAKE_BINARY_DIR}/")

# op_host: the OpDef registration (generated from op_def), the CANN glue and the plain tiling.
file(GLOB _plain_tiling CONFIGURE_DEPENDS "${_src}/op_host/tiling/*.cpp")
set(_op_host_sources "${_src}/op_host/${NPU_OP_FILE}_def.cpp" "${_src}/op_host/${NPU_OP_FILE}_tiling.cpp" ${_plain_tiling})
set(_op_host_includes "-I${_src}/op_host" "-I${_src}/op_kernel")
npu_op_code_gen(SRC ${_op_host_sources} PACKAGE ${vendor_name} OUT_DIR "${ASCEND_AUTOGEN_PATH}"
                COMPILE_OPTIONS -std=c++17 ${_op_host_includes}
                OPTIONS OPS_VENDOR_NAME ${vendor_name})

file(GLOB _aclnn_sources "${ASCEND_AUTOGEN_PATH}/aclnn_*.cpp")
set(_proto_source "${ASCEND_AUTOGEN_PATH}/op_proto.cc")
set_source_files_properties(${_aclnn_sources} ${_proto_source} PROPERTIES GENERATED TRUE)
npu_op_library(cust_opapi ACLNN ${_aclnn_sources})
npu_op_library(cust_op_proto GRAPH ${_op_host_sources} ${_proto_source})
npu_op_library(cust_optiling TILING ${_op_host_sources})
foreach(_lib IN ITEMS cust_op_proto cust_optiling)
    target_include_directories(${_lib} PRIVATE "${_src}/op_host" "${_src}/op_kernel")
    target_compile_features(${_lib} PRIVATE cxx_std_17)
endforeach()
target_compile_options(cust_opapi PRIVATE -fvisibility=hidden)
npu_op_package_add(${vendor_name} LIBRARY cust_optiling cust_opapi cust_op_proto)

# op_kernel: the one kernel source (op_kernel/<op file>.cpp, the name CANN derives from the op type),
# compiled per SoC family into binary kernels.
npu_op_kernel_library(ascendc_kernels SRC_BASE "${_src}/op_kernel/" TILING_LIBRARY cust_optiling)
npu_op_package_add(${vendor_name} LIBRARY ascendc_kernels)

add_subdirectory("${CMAKE_CURRENT_LIST_DIR}/kernel_device_check" kernel_device_check EXCLUDE_FROM_ALL)

foreach(_dir IN ITEMS "${_src}/framework/atb_plugin" "${_src}/examples/atb")
    if(EXISTS "${_dir}/CMakeLists.txt")
        get_filename_component(_name "${_dir}" NAME)
        add_subdirectory("${_dir}" "${_name}")
    endif()
endforeach()
add_subdirectory("${_src}/examples/aclnn" examples_aclnn)

# `cmake --install` of what `binary` and `all` built (CANN's rules install into INSTALL_PATH above,
# the build folder, whatever the prefix), then the makeself .run of it.
add_custom_target(package
    COMMAND "${CMAKE_COMMAND}" --install "${CMAKE_BINARY_DIR}"
    COMMAND "${_src}/scripts/package.sh" --vendor "${vendor_name}" --cann "${CANN_ROOT}"
            --build-dir "${CMAKE_BINARY_DIR}" --out "${CMAKE_BINARY_DIR}"
    WORKING_DIRECTORY "${_src}"
    COMMENT "Packaging ${CMAKE_BINARY_DIR}/custom_opp_<os>_<arch>.run")
