// SPDX-License-Identifier: Apache-2.0
#pragma once
// The stack a call takes on this core, measured: the free stack below the caller is painted with
// a pattern, the call runs, and the deepest word that no longer holds the pattern marks its
// high-water. tests/firmware/stack_budget.py computes the bound this must stay under.

#include <cstddef>

namespace fw {

// Bytes of stack below the probe's own frame that fn(context) used (its frames, and those of
// everything it called), with interrupts masked: a firmware adds its handlers' stack on top.
// The probe's frame is a few words; fn should be a thin trampoline.
std::size_t stack_bytes_used(void (*fn)(void*), void* context) noexcept;

}  // namespace fw
