# SPDX-License-Identifier: Apache-2.0
# emha-run (emha_run.cpp), the on-device benchmark of an exported layer, for Linux boards and the
# host. The top-level CMakeLists.txt calls this when EMHA_RUN_MODEL names a header written by
# lib/export/emha_export.py --header; tests/export builds one per round-trip fixture.
#   emha_add_run(<target> HEADER <exported header> NAME <its C++ namespace>)
function(emha_add_run target)
  cmake_parse_arguments(run "" "HEADER;NAME" "" ${ARGN})
  get_filename_component(header "${run_HEADER}" ABSOLUTE)
  add_executable(${target} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/emha_run.cpp)
  target_compile_definitions(${target} PRIVATE "EMHA_RUN_HEADER=\"${header}\"" EMHA_RUN_NAME=${run_NAME})
  target_link_libraries(${target} PRIVATE emha::emha)
  emha_warnings(${target})
  emha_sanitize(${target})
endfunction()
