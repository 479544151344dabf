// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "emha/arena.hpp"

using emha::ArenaRef;
using emha::Status;

namespace {
bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }
}  // namespace

TEST_CASE("StaticArena storage is aligned and sized") {
  emha::StaticArena<1000, 128> arena;
  CHECK(arena.capacity() == 1000);
  CHECK(arena.used() == 0);
  float* p = nullptr;
  REQUIRE(arena.allocate(1, p) == Status::ok);
  CHECK(aligned(p, 128));  // the first allocation sits at the base
}

TEST_CASE("allocations honour every power-of-two alignment") {
  emha::StaticArena<4096> arena;
  for (std::size_t align : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 256u}) {
    char* pad = nullptr;
    REQUIRE(arena.allocate(3, pad) == Status::ok);  // misalign the bump pointer
    void* p = nullptr;
    REQUIRE(arena.allocate_bytes(10, align, p) == Status::ok);
    CHECK(aligned(p, align));
  }
  void* p = nullptr;
  CHECK(arena.allocate_bytes(8, 3, p) == Status::invalid_argument);
  CHECK(p == nullptr);
}

TEST_CASE("an ArenaRef over a misaligned caller buffer still aligns") {
  alignas(64) std::byte buffer[256];
  ArenaRef arena(buffer + 1, sizeof buffer - 1);
  double* d = nullptr;
  REQUIRE(arena.allocate(4, d, 32) == Status::ok);
  CHECK(aligned(d, 32));
  CHECK(reinterpret_cast<std::byte*>(d) >= buffer + 1);
  CHECK(reinterpret_cast<std::byte*>(d + 4) <= buffer + sizeof buffer);
  CHECK(arena.used() == static_cast<std::size_t>(reinterpret_cast<std::byte*>(d + 4) - (buffer + 1)));
}

TEST_CASE("exhaustion returns no_space and leaves the arena as it was") {
  emha::StaticArena<256> arena;
  float* a = nullptr;
  REQUIRE(arena.allocate(60, a) == Status::ok);  // 240 bytes
  const std::size_t used = arena.used();
  float* b = reinterpret_cast<float*>(&arena);
  CHECK(arena.allocate(5, b) == Status::no_space);
  CHECK(b == nullptr);
  CHECK(arena.used() == used);
  CHECK(arena.allocate(4, b) == Status::ok);  // exactly the rest
  CHECK(arena.available() == 0);
  CHECK(arena.allocate(1, b) == Status::no_space);
  // A request larger than the whole address space must not wrap around.
  void* p = nullptr;
  CHECK(arena.allocate_bytes(SIZE_MAX, 1, p) == Status::no_space);
  CHECK(arena.allocate_bytes(SIZE_MAX - 8, 64, p) == Status::no_space);
  ArenaRef empty;
  CHECK(empty.allocate_bytes(1, 1, p) == Status::no_space);
}

TEST_CASE("an element count whose byte size wraps around is no_space, not a short allocation") {
  emha::StaticArena<256> arena;
  // (SIZE_MAX / 4 + 2) * 4 wraps to 4 bytes: it must not be taken for a 4-byte request.
  float* f = reinterpret_cast<float*>(&arena);
  CHECK(arena.allocate(SIZE_MAX / sizeof(float) + 2, f) == Status::no_space);
  CHECK(f == nullptr);
  double* d = reinterpret_cast<double*>(&arena);
  CHECK(arena.allocate(SIZE_MAX / sizeof(double) + 1, d, 64) == Status::no_space);
  CHECK(d == nullptr);
  CHECK(arena.used() == 0);
  CHECK(arena.high_water() == 0);
  // The largest count that does not wrap is refused by size alone.
  CHECK(arena.allocate(SIZE_MAX / sizeof(float), f) == Status::no_space);
  CHECK(arena.allocate(64, f) == Status::ok);  // and the arena still works
}

TEST_CASE("reset, marks, scopes and the high-water mark") {
  emha::StaticArena<1024> arena;
  char* p = nullptr;
  REQUIRE(arena.allocate(100, p) == Status::ok);
  const ArenaRef::Mark m = arena.mark();
  {
    emha::ArenaScope scope(arena);
    REQUIRE(arena.allocate(300, p) == Status::ok);
    CHECK(arena.used() == 400);
  }
  CHECK(arena.used() == 100);
  CHECK(arena.high_water() == 400);
  REQUIRE(arena.allocate(50, p) == Status::ok);
  arena.release(m);
  CHECK(arena.used() == 100);
  arena.release(900);  // a mark beyond the current use is ignored
  CHECK(arena.used() == 100);
  arena.reset();
  CHECK(arena.used() == 0);
  CHECK(arena.high_water() == 400);
  arena.reset_high_water();
  CHECK(arena.high_water() == 0);
}
