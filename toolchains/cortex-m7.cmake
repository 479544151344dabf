# SPDX-License-Identifier: Apache-2.0
# Cortex-M7 with the double-precision FPU, run as the MPS2 AN500 FPGA image (qemu -M mps2-an500, 25 MHz).
set(emha_cpu_flags "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard -mthumb")
set(emha_board mps2-an500)
set(emha_core_hz 25000000)
include(${CMAKE_CURRENT_LIST_DIR}/common-cortex-m.cmake)
