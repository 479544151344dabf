# SPDX-License-Identifier: Apache-2.0
# Cortex-M55 (armv8.1-M, FPU + Helium/MVE), run as the MPS3 AN547 FPGA image (qemu -M mps3-an547,
# 32 MHz). -mcpu=cortex-m55 enables MVE with float (__ARM_FEATURE_MVE == 3); xsimd has no MVE
# backend, so emha's kernels run on its own 4-lane MVE vectors (lib/src/simd_arch.hpp).
# -DEMHA_SIMD=OFF -DEMHA_EXPECTED_ISA=scalar gives the scalar path instead.
set(emha_cpu_flags "-mcpu=cortex-m55 -mfloat-abi=hard -mthumb")
set(emha_board mps3-an547)
set(emha_core_hz 32000000)
set(EMHA_EXPECTED_ISA "mve" CACHE STRING "simd_isa() the tests expect on this target")
include(${CMAKE_CURRENT_LIST_DIR}/common-cortex-m.cmake)
