# SPDX-License-Identifier: Apache-2.0
# Cortex-M55 (armv8.1-M, FPU + Helium/MVE), run as the MPS3 AN547 FPGA image (qemu -M mps3-an547,
# 32 MHz). GCC may auto-vectorize with MVE; xsimd has no MVE backend, so emha's kernels take the
# scalar path.
set(emha_cpu_flags "-mcpu=cortex-m55 -mfloat-abi=hard -mthumb")
set(emha_board mps3-an547)
set(emha_core_hz 32000000)
include(${CMAKE_CURRENT_LIST_DIR}/common-cortex-m.cmake)
