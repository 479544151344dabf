# SPDX-License-Identifier: Apache-2.0
# 32-bit Raspberry Pi OS / Debian armhf on a Pi 2, 3 or 4 (armv7-a with NEON and VFPv4).
# Debian's armhf baseline has no NEON (xsimd would find no architecture): ask for it. qemu runs it
# as a cortex-a7 (Pi 2), the smallest core with NEON + VFPv4 (cortex-a8/a9 lack VFPv4).
# -Wno-psabi: GCC notes the armhf ABI change of GCC 7 on every std::pair<float,...> otherwise.
set(emha_triplet arm-linux-gnueabihf)
set(emha_processor armv7l)
set(emha_flags "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard -Wno-psabi")
set(emha_qemu qemu-arm -cpu cortex-a7)
set(emha_isa "arm32+neon")
include(${CMAKE_CURRENT_LIST_DIR}/common-linux.cmake)
