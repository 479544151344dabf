// SPDX-License-Identifier: Apache-2.0
// Defines the malloc family in the executable, so every allocation in the process goes through
// here, those made inside libstdc++.so (operator new) included; forwards to glibc's __libc_*
// entry points. Cannot share an executable with ASan or valgrind, which interpose the same names.

#include "heap_gate.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {
std::atomic<bool> g_armed{false};
std::atomic<std::size_t> g_attempts{0};

bool refuse() noexcept {
  if (!g_armed.load(std::memory_order_relaxed)) return false;
  g_attempts.fetch_add(1, std::memory_order_relaxed);
  return true;
}
}  // namespace

namespace heap_gate {
void arm() noexcept {
  g_attempts.store(0);
  g_armed.store(true);
}
std::size_t disarm() noexcept {
  g_armed.store(false);
  return g_attempts.load();
}
}  // namespace heap_gate

extern "C" {

void* malloc(std::size_t n) { return refuse() ? nullptr : __libc_malloc(n); }
void* calloc(std::size_t n, std::size_t s) { return refuse() ? nullptr : __libc_calloc(n, s); }
void* realloc(void* p, std::size_t n) { return refuse() ? nullptr : __libc_realloc(p, n); }
void free(void* p) { __libc_free(p); }
void* memalign(std::size_t a, std::size_t n) { return refuse() ? nullptr : __libc_memalign(a, n); }
void* aligned_alloc(std::size_t a, std::size_t n) { return refuse() ? nullptr : __libc_memalign(a, n); }
void* valloc(std::size_t n) { return refuse() ? nullptr : __libc_memalign(4096, n); }
int posix_memalign(void** out, std::size_t a, std::size_t n) {
  if (refuse()) return ENOMEM;
  *out = __libc_memalign(a, n);
  return *out ? 0 : ENOMEM;
}

}  // extern "C"
