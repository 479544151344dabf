# SPDX-License-Identifier: Apache-2.0
# Pi Zero / Pi 1 class (ARM1176, armv6 + VFPv2, no NEON): emha takes its scalar path.
# -marm: the Debian compiler defaults to Thumb-2, which armv6 lacks.
#
# Only our code is armv6: Debian's armhf libc and libstdc++ are armv7-a + Thumb-2, so these
# binaries do not run on a real Pi Zero/1 (link against Raspberry Pi OS's armhf sysroot for that),
# and qemu cannot run them as an arm1176. qemu runs them as a cortex-a7 with NEON switched off
# (neon=off): the libraries' armv7 instructions execute, and a NEON instruction in our code would
# stop the tests with SIGILL, so the scalar build is checked to be really NEON-free.
set(emha_triplet arm-linux-gnueabihf)
set(emha_processor armv6l)
set(emha_flags "-march=armv6 -mfpu=vfp -mfloat-abi=hard -marm -Wno-psabi")
set(emha_qemu qemu-arm -cpu cortex-a7,neon=off)
set(emha_isa "scalar")
include(${CMAKE_CURRENT_LIST_DIR}/common-linux.cmake)
