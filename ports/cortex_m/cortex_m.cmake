# SPDX-License-Identifier: Apache-2.0
# Firmware executables for the boards of toolchains/cortex-m*.cmake: emha's start-up code and
# vector table (startup.cpp), the board's linker script (ld/<board>.ld) and a map file.
#
#   include(<emha>/ports/cortex_m/cortex_m.cmake)
#   add_executable(app main.cpp)
#   target_link_libraries(app PRIVATE emha::emha)
#   emha_cortex_m_executable(app HEAP_GATE)
#
# HEAP_GATE makes any heap use a link error: every allocation entry point of newlib and of C++
# operator new is --wrap'ed and no __wrap_ function exists, so a reference to malloc, new or
# _sbrk (from the firmware, emha or a library function such as printf) leaves
# `undefined reference to __wrap_malloc` (-Wl,-y,malloc tells who wants it).
set(EMHA_CORTEX_M_DIR ${CMAKE_CURRENT_LIST_DIR})

set(EMHA_CORTEX_M_HEAP_SYMBOLS
  malloc free calloc realloc reallocf memalign aligned_alloc posix_memalign valloc pvalloc
  _malloc_r _free_r _calloc_r _realloc_r _memalign_r _sbrk _sbrk_r
  _Znwj _Znaj _ZnwjRKSt9nothrow_t _ZnajRKSt9nothrow_t
  _ZnwjSt11align_val_t _ZnajSt11align_val_t
  _ZnwjSt11align_val_tRKSt9nothrow_t _ZnajSt11align_val_tRKSt9nothrow_t)

function(emha_cortex_m_executable target)
  cmake_parse_arguments(arg "HEAP_GATE" "" "" ${ARGN})
  if(NOT EMHA_CORTEX_M_LINKER_SCRIPT)
    message(FATAL_ERROR "emha_cortex_m_executable needs a toolchains/cortex-m*.cmake toolchain file")
  endif()
  target_sources(${target} PRIVATE ${EMHA_CORTEX_M_DIR}/startup.cpp)
  target_include_directories(${target} PRIVATE ${EMHA_CORTEX_M_DIR})
  set_target_properties(${target} PROPERTIES SUFFIX .elf
    LINK_DEPENDS "${EMHA_CORTEX_M_LINKER_SCRIPT};${EMHA_CORTEX_M_DIR}/ld/sections.ld")
  target_link_options(${target} PRIVATE -nostartfiles "-T${EMHA_CORTEX_M_LINKER_SCRIPT}"
                      "-L${EMHA_CORTEX_M_DIR}/ld" "LINKER:-Map=$<TARGET_FILE:${target}>.map")
  if(arg_HEAP_GATE)
    list(TRANSFORM EMHA_CORTEX_M_HEAP_SYMBOLS PREPEND "--wrap=" OUTPUT_VARIABLE wraps)
    string(REPLACE ";" "," wraps "${wraps}")
    target_link_options(${target} PRIVATE "LINKER:${wraps}")
  endif()
endfunction()
