# The NPU build, switched on by an NPU preset (CMakePresets.json, generated from op_def): those set
# ASCEND_COMPUTE_UNIT, and then CANN must be present. Without ASCEND_COMPUTE_UNIT (the cpu preset,
# pip builds) this file does nothing.
#
# With CANN it builds, to CANN's custom-op conventions:
#   cust_opapi / cust_optiling   op_host: the generated OpDef registration + the CANN glue + the plain tiling
#   rms_norm_backward kernel     op_kernel through CANN's Ascend C compiler (ascendc_library)
#   aclnn example                examples/aclnn (links CANN's ascendcl and the installed nnopbase)
#   package                      scripts/package.sh -> build_out/custom_opp_<os>_<arch>.run
# This path cannot run on a machine without CANN; the cpu preset and the tests cover everything else.
if(NOT ASCEND_COMPUTE_UNIT)
    return()
endif()

file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../python/rmsnorm_backward/cann_default_paths.txt" _cann_defaults REGEX "^[^#]")
set(_cann_candidates "${ASCEND_CANN_PACKAGE_PATH}" "$ENV{ASCEND_HOME_PATH}" ${_cann_defaults})
set(_cann_looked "")
set(CANN_ROOT "")
foreach(_cand IN LISTS _cann_candidates)
    if(_cand STREQUAL "")
        continue()
    endif()
    list(APPEND _cann_looked "${_cand}")
    if(EXISTS "${_cand}/include/acl/acl.h")
        set(CANN_ROOT "${_cand}")
        break()
    endif()
endforeach()
if(NOT CANN_ROOT)
    list(JOIN _cann_looked ", " _cann_looked_text)
    message(FATAL_ERROR
        "The ${ASCEND_COMPUTE_UNIT} preset needs the CANN toolkit, but no include/acl/acl.h was found in "
        "${_cann_looked_text} (set ASCEND_HOME_PATH by sourcing CANN's set_env.sh, or use --preset cpu).")
endif()
message(STATUS "CANN: ${CANN_ROOT} for ${ASCEND_COMPUTE_UNIT}, vendor ${vendor_name}")

set(_src "${CMAKE_CURRENT_SOURCE_DIR}")
set(_cann_includes "${CANN_ROOT}/include" "${CANN_ROOT}/include/experiment/platform"
    "${CANN_ROOT}/include/experiment/runtime" "${CANN_ROOT}/include/experiment/msprof")
link_directories("${CANN_ROOT}/lib64")

# op_host: registration (generated), CANN glue and the plain tiling, one shared library.
file(GLOB _tiling_sources CONFIGURE_DEPENDS "${_src}/op_host/tiling/*.cpp")
add_library(cust_optiling SHARED
    "${_src}/op_host/rms_norm_backward_def.cpp"
    "${_src}/op_host/rms_norm_backward_tiling.cpp"
    ${_tiling_sources})
target_include_directories(cust_optiling PRIVATE ${_cann_includes} "${_src}/op_host" "${_src}/op_kernel")
target_link_libraries(cust_optiling PRIVATE register tiling_api platform exe_graph graph c_sec)
# Named and placed as the vendor layout wants it: scripts/package.sh takes build_out/package/<path>.
set_target_properties(cust_optiling PROPERTIES OUTPUT_NAME "cust_opmaster_rt2.0"
    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/package/op_impl/ai_core/tbe/op_tiling/lib/linux/${CMAKE_SYSTEM_PROCESSOR}")

# op_kernel: CANN's Ascend C kernel CMake support compiles the unchanged kernel source for the SoC.
set(ASCENDC_CMAKE_DIR "${CANN_ROOT}/compiler/tikcpp/ascendc_kernel_cmake")
if(NOT EXISTS "${ASCENDC_CMAKE_DIR}/ascendc.cmake")
    message(FATAL_ERROR "CANN at ${CANN_ROOT} has no ${ASCENDC_CMAKE_DIR}/ascendc.cmake: the Ascend C "
                        "compiler package (compiler/tikcpp) is missing from this CANN install.")
endif()
set(SOC_VERSION "${ASCEND_COMPUTE_UNIT}")
include("${ASCENDC_CMAKE_DIR}/ascendc.cmake")
ascendc_library(rms_norm_backward_kernel STATIC "${_src}/op_kernel/rms_norm_backward.cpp")
ascendc_include_directories(rms_norm_backward_kernel PRIVATE "${_src}/op_kernel" "${_src}/op_host")

add_subdirectory("${_src}/examples/aclnn" examples_aclnn)

add_custom_target(package
    COMMAND "${_src}/scripts/package.sh" --vendor "${vendor_name}" --soc "${ASCEND_COMPUTE_UNIT}"
            --build-dir "${CMAKE_BINARY_DIR}" --out "${CMAKE_BINARY_DIR}"
    DEPENDS cust_optiling rms_norm_backward_kernel
    WORKING_DIRECTORY "${_src}"
    COMMENT "Packaging build_out/custom_opp_<os>_<arch>.run")
