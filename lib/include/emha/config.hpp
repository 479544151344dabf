// SPDX-License-Identifier: Apache-2.0
#pragma once
// Build policies, the only macros in emha. EMHA_CHECKS comes from CMake (option EMHA_CHECKS).

#include "emha/port.hpp"

#ifndef EMHA_CHECKS
#define EMHA_CHECKS 1
#endif

// Precondition of a kernel: a violated one goes to the port's abort hook; compiled away with
// EMHA_CHECKS=0. Layers check their inputs with Status instead; this is for programming errors.
#if EMHA_CHECKS
#define EMHA_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::emha::port::abort(__FILE__, __LINE__, #cond))
#else
#define EMHA_ASSERT(cond) static_cast<void>(0)
#endif
