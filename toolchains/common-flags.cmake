# SPDX-License-Identifier: Apache-2.0
# emha_toolchain_flags(<C|CXX|ASM|EXE_LINKER> <flags>): the toolchain's flags for CMAKE_<kind>_FLAGS.
# CMake copies CMAKE_<kind>_FLAGS_INIT into the cache only on a build tree's first configure, and
# not at all when CMAKE_<kind>_FLAGS is given on the command line: so the flags are also put in
# front of a cached value that lacks them, and a tree configured for another CPU (another
# -mcpu/-march) is refused rather than silently built with its old flags.
function(emha_toolchain_flags kind flags)
  set(CMAKE_${kind}_FLAGS_INIT "${flags}" PARENT_SCOPE)
  if(NOT DEFINED CACHE{CMAKE_${kind}_FLAGS})
    return()
  endif()
  string(FIND " ${CMAKE_${kind}_FLAGS} " " ${flags} " at)
  if(NOT at EQUAL -1)
    return()
  endif()
  if(CMAKE_${kind}_FLAGS MATCHES "-mcpu=|-march=")
    message(FATAL_ERROR "This build tree has CMAKE_${kind}_FLAGS='${CMAKE_${kind}_FLAGS}', not "
                        "'${flags}' (another CPU, e.g. another EMHA_ARM_CPU?): use a fresh build directory.")
  endif()
  set(CMAKE_${kind}_FLAGS "${flags} ${CMAKE_${kind}_FLAGS}" CACHE STRING "Flags for ${kind}" FORCE)
endfunction()
