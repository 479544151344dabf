// SPDX-License-Identifier: Apache-2.0
#pragma once
// A test hook of the posix pool (thread_pool.cpp), for tests only: not installed, not in emha.hpp.
// park_worker(w) holds worker w (1 .. workers() - 1) at its next claim point, holding no item,
// until unpark_workers(); worker_parked(w) tells whether it is held now. The calls it was taking
// items of, and every later call, finish without it.

#include <cstddef>

namespace emha::port::testing {

void park_worker(std::size_t worker) noexcept;
bool worker_parked(std::size_t worker) noexcept;
void unpark_workers() noexcept;

}  // namespace emha::port::testing
