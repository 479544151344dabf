# SPDX-License-Identifier: Apache-2.0
# Shared part of the Linux ARM toolchain files (Raspberry Pi class boards, Debian cross g++ and
# multiarch target libraries, qemu-user to run tests). The short per-target file sets, then
# includes this:
#   emha_triplet    GNU triplet of the cross compiler and of /usr/lib/<triplet> (aarch64-linux-gnu)
#   emha_processor  CMAKE_SYSTEM_PROCESSOR (aarch64, armv7l, armv6l)
#   emha_flags      code generation flags for C and C++ (-mcpu=..., -march=... -mfpu=...)
#   emha_qemu       the qemu-user emulator and its CPU model: qemu-aarch64 -cpu cortex-a72
#   emha_isa        what emha::simd_isa() reports on this target (tests/test_simd.cpp asserts it)
#
# No CMAKE_FIND_ROOT_PATH re-rooting: the target's xsimd and benchmark CMake packages live in
# /usr/lib/<triplet>/cmake (Debian multiarch), doctest's in /usr/lib/cmake, and the cross
# compilers already search /usr/include last. Never add -isystem /usr/include (host glibc first).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${emha_processor})
set(CMAKE_C_COMPILER ${emha_triplet}-gcc)
set(CMAKE_CXX_COMPILER ${emha_triplet}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${emha_triplet})

include(${CMAKE_CURRENT_LIST_DIR}/common-flags.cmake)
emha_toolchain_flags(C "${emha_flags}")
emha_toolchain_flags(CXX "${emha_flags}")

# binfmt_misc is not assumed: ctest starts every test binary through qemu-user, with / as the
# root of the target's multiarch libraries (/lib/<triplet>).
list(GET emha_qemu 0 emha_qemu_program)
find_program(EMHA_QEMU_USER_${emha_processor} ${emha_qemu_program} REQUIRED)
list(POP_FRONT emha_qemu)
set(CMAKE_CROSSCOMPILING_EMULATOR ${EMHA_QEMU_USER_${emha_processor}} -L / ${emha_qemu})

set(EMHA_PORT "posix" CACHE STRING "Platform hooks from ports/<name>: posix, cortex_m, none")
set(EMHA_EXPECTED_ISA "${emha_isa}" CACHE STRING "simd_isa() the tests expect on this target")
