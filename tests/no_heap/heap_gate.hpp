// SPDX-License-Identifier: Apache-2.0
#pragma once
// A counting malloc-family interposer (heap_gate.cpp). While armed, every allocation is counted
// and FAILS (returns null), so code under test that touches the heap cannot succeed by accident.

#include <cstddef>

namespace heap_gate {

void arm() noexcept;
// Disarms and returns the number of allocation attempts made while armed.
std::size_t disarm() noexcept;

}  // namespace heap_gate
