// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fixed-capacity bump allocators. No heap: the bytes are either a member array (StaticArena) or
// memory the caller owns (ArenaRef over a buffer, e.g. in a linker section).

#include <cstddef>
#include <cstdint>

#include "emha/detail/arena_storage.hpp"
#include "emha/status.hpp"

namespace emha {

// Who holds a buffer an object works in (MultiHeadAttention's arena, a KvCache's storage).
enum class ArenaOwnership : unsigned char {
  owned,   // the object holds it as a member
  caller,  // the caller passes it (e.g. a buffer in a linker section)
};

// Bytes to reserve for `bytes` aligned to `align` inside an arena whose base alignment is unknown.
constexpr std::size_t arena_round_up(std::size_t bytes, std::size_t align) noexcept {
  return (bytes + align - 1) / align * align;
}

// A size-erased view of an arena: allocations are aligned bump allocations inside
// [base, base + capacity). Not thread-safe; one owner at a time.
class ArenaRef {
 public:
  // Offsets into the arena, for scoped release (see ArenaScope).
  using Mark = std::size_t;

  constexpr ArenaRef() noexcept = default;
  ArenaRef(void* base, std::size_t capacity) noexcept
      : base_(static_cast<std::byte*>(base)), capacity_(base ? capacity : 0) {}

  // `out` = `count` elements of T aligned to `align` (a power of two >= alignof(T)).
  // Returns no_space, and leaves `out` null and the arena unchanged, when they do not fit
  // (count * sizeof(T) past SIZE_MAX included: that never fits).
  template <class T>
  Status allocate(std::size_t count, T*& out, std::size_t align = alignof(T)) noexcept {
    out = nullptr;
    if (count > SIZE_MAX / sizeof(T)) return Status::no_space;
    void* p = nullptr;
    const Status s = allocate_bytes(count * sizeof(T), align < alignof(T) ? alignof(T) : align, p);
    out = static_cast<T*>(p);
    return s;
  }

  Status allocate_bytes(std::size_t bytes, std::size_t align, void*& out) noexcept {
    out = nullptr;
    if (align == 0 || (align & (align - 1)) != 0) return Status::invalid_argument;
    if (bytes > capacity_) return Status::no_space;  // also keeps the sums below from wrapping
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(base_);
    const std::uintptr_t aligned = (base + used_ + (align - 1)) & ~std::uintptr_t(align - 1);
    const std::size_t start = static_cast<std::size_t>(aligned - base);
    if (start > capacity_ || bytes > capacity_ - start) return Status::no_space;
    used_ = start + bytes;
    if (used_ > high_water_) high_water_ = used_;
    out = base_ + start;
    return Status::ok;
  }

  // The arena's first byte (null for an empty view) and its size in bytes.
  const void* base() const noexcept { return base_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t used() const noexcept { return used_; }
  std::size_t available() const noexcept { return capacity_ - used_; }
  // The most bytes ever in use since construction or reset_high_water().
  std::size_t high_water() const noexcept { return high_water_; }
  void reset_high_water() noexcept { high_water_ = used_; }

  void reset() noexcept { used_ = 0; }
  Mark mark() const noexcept { return used_; }
  // Frees everything allocated after `m` was taken. A mark from the future is ignored.
  void release(Mark m) noexcept {
    if (m <= used_) used_ = m;
  }

 private:
  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::size_t high_water_ = 0;
};

// Releases what was allocated from `arena` during this scope when it ends.
class ArenaScope {
 public:
  explicit ArenaScope(ArenaRef& arena) noexcept : arena_(arena), mark_(arena.mark()) {}
  ~ArenaScope() { arena_.release(mark_); }
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

 private:
  ArenaRef& arena_;
  ArenaRef::Mark mark_;
};


// An arena that owns `Bytes` bytes aligned to `Align`, e.g. as a static or a member.
// Not copyable: the view points into the object itself.
template <std::size_t Bytes, std::size_t Align = 64>
class StaticArena : private detail::ArenaStorage<Bytes, Align>, public ArenaRef {
 public:
  static constexpr std::size_t bytes = Bytes;
  static constexpr std::size_t alignment = Align;

  StaticArena() noexcept : ArenaRef(this->storage, Bytes) {}
  StaticArena(const StaticArena&) = delete;
  StaticArena& operator=(const StaticArena&) = delete;

  ArenaRef& ref() noexcept { return *this; }
};

}  // namespace emha
