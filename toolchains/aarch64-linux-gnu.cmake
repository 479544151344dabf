# SPDX-License-Identifier: Apache-2.0
# 64-bit Raspberry Pi OS / Debian arm64: Pi 3 (cortex-a53), Pi 4 (cortex-a72), Pi 5 (cortex-a76).
# EMHA_ARM_CPU is both -mcpu and qemu's -cpu, so code that needs a newer core than the board's
# dies under qemu with SIGILL instead of on the board (qemu's default -cpu max has SVE, fp16...).
set(EMHA_ARM_CPU "cortex-a72" CACHE STRING "Target core: cortex-a53 (Pi 3), cortex-a72 (Pi 4), cortex-a76 (Pi 5)")
set_property(CACHE EMHA_ARM_CPU PROPERTY STRINGS cortex-a53 cortex-a72 cortex-a76)
if(NOT EMHA_ARM_CPU MATCHES "^cortex-a(53|72|76)$")
  message(FATAL_ERROR "EMHA_ARM_CPU must be cortex-a53, cortex-a72 or cortex-a76, not '${EMHA_ARM_CPU}'")
endif()

set(emha_triplet aarch64-linux-gnu)
set(emha_processor aarch64)
set(emha_flags "-mcpu=${EMHA_ARM_CPU}")
set(emha_qemu qemu-aarch64 -cpu ${EMHA_ARM_CPU})
set(emha_isa "arm64+neon")
include(${CMAKE_CURRENT_LIST_DIR}/common-linux.cmake)
