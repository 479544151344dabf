# SPDX-License-Identifier: Apache-2.0
# Shared part of the bare-metal Cortex-M toolchain files: arm-none-eabi-g++ with newlib-nano, no
# OS, no heap; tests run under qemu-system-arm with semihosting. The short per-board file sets,
# then includes this:
#   emha_cpu_flags  -mcpu/-mfpu/-mfloat-abi of the core
#   emha_board      the qemu machine, also the name of ports/cortex_m/ld/<board>.ld
#   emha_core_hz    the board's core clock in Hz (cycles_per_second() of the cortex_m port)
#
# Building only libemha.a for a firmware project works from the top level with this toolchain
# (EMHA_PORT=cortex_m); tests and device benchmarks are the separate project in tests/firmware,
# since doctest and Google Benchmark need an OS. See toolchains/README.md.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# Compiler checks cannot link a program before the firmware brings its start-up code.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

include(${CMAKE_CURRENT_LIST_DIR}/common-flags.cmake)
set(emha_common_flags "${emha_cpu_flags} -ffunction-sections -fdata-sections")
emha_toolchain_flags(C "${emha_common_flags}")
emha_toolchain_flags(ASM "${emha_cpu_flags}")
emha_toolchain_flags(CXX "${emha_common_flags} -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit -DEMHA_CORTEX_M_CORE_HZ=${emha_core_hz}")
# nano.specs: newlib-nano; nosys.specs: stub system calls. No printf anywhere: it pulls in malloc.
emha_toolchain_flags(EXE_LINKER "--specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")

# Find packages and libraries of the target only (newlib's tree): the host's xsimd package would
# bring -isystem /usr/include, i.e. glibc's headers. lib/CMakeLists.txt then exposes xsimd through
# a directory holding only an `xsimd` link (xsimd has no Cortex-M backend: its configuration
# header says so, and lib/src/simd_arch.hpp takes the scalar path, or MVE on a core with Helium).
set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Board: memory map (linker script) and machine for qemu. semihosting: log lines, the exit code.
set(EMHA_CORTEX_M_BOARD ${emha_board})
set(EMHA_CORTEX_M_LINKER_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/../ports/cortex_m/ld/${emha_board}.ld)
# Without qemu (a firmware project that only builds), ctest has nothing to run the images with.
find_program(EMHA_QEMU_SYSTEM_ARM qemu-system-arm)
if(EMHA_QEMU_SYSTEM_ARM)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMHA_QEMU_SYSTEM_ARM} -M ${emha_board} -nographic
      -monitor none -serial none -semihosting-config enable=on,target=native -kernel)
endif()

set(EMHA_PORT "cortex_m" CACHE STRING "Platform hooks from ports/<name>: posix, cortex_m, none")
set(EMHA_EXPECTED_ISA "scalar" CACHE STRING "simd_isa() the tests expect on this target")
set(EMHA_BUILD_TESTS OFF CACHE BOOL "doctest needs an OS: Cortex-M tests are tests/firmware")
set(EMHA_BUILD_BENCH OFF CACHE BOOL "Google Benchmark needs an OS: Cortex-M benchmarks are bench/device")
