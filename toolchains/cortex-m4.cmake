# SPDX-License-Identifier: Apache-2.0
# Cortex-M4F (single-precision FPU), run as the MPS2 AN386 FPGA image (qemu -M mps2-an386, 25 MHz).
set(emha_cpu_flags "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb")
set(emha_board mps2-an386)
set(emha_core_hz 25000000)
include(${CMAKE_CURRENT_LIST_DIR}/common-cortex-m.cmake)
