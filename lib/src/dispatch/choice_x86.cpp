// SPDX-License-Identifier: Apache-2.0
// x86-64 run-time dispatch: the AVX-512 with VNNI, AVX2+FMA with AVX-VNNI, AVX-512, AVX2+FMA and
// SSE2 variants of the kernels are all in the library (each compiled with its own flags, in its own namespace:
// isa.hpp); the first call that needs a kernel picks the best one for this CPU and its OS, once.
// The choice is an atomic pointer set once (compare-and-swap from null) and never changed after;
// select_simd_isa() may make it first, to pin a variant (tests run each one; benchmarks compare
// them).
//
// "Best" is decided from CPUID alone, so that a machine always gets the same variant and the
// same bits: AVX-512 where it doubles AVX2's FMA throughput (Intel's AVX-512 cores; AMD from
// Zen 5, family 0x1A, whose FMA units are 512 bits wide), AVX2+FMA on AMD Zen 4 (family 0x19:
// AVX-512 runs on 256-bit units at AVX2's FLOP rate, and the AVX-512 kernels measured 9-18%
// slower there at attention sizes, bench/README.md history), AVX2+FMA without AVX-512, SSE2
// below that. Timing the variants at start-up would choose by noise, and differently per run.
//
// The full-integer kernels (kernel_list.def's EMHA_KERNEL_S8 lines, kernels_s8()) choose apart: VPDPBUSD
// (AVX-512 VNNI) does 32 int8 products per 256-bit instruction where VPMADDWD does 16 after a
// sign extension, on 256-bit units as well as 512-bit ones, so they take the VNNI variant
// wherever it runs, Zen 4 included, while the float kernels keep the choice above; without AVX-512
// they take AVX-VNNI's (the same instruction, VEX-encoded on 256 bits: Intel's client cores from
// Alder Lake). The VNNI variants are integer-only: their tables' float lines are the AVX-512 and
// AVX2 variants' (variant_table.cpp). Their results are integers, the same on every
// variant.
//
// Detection is our own: xsimd 8.1's available_architectures() reads the AVX bit after
// cpuid(0x80000001) has replaced leaf 1's registers, and never asks XGETBV whether the OS saves
// the AVX and AVX-512 registers, so it can offer kernels that fault.

#include <atomic>
#include <cpuid.h>
#include <cstdint>
#include <cstring>

#include "dispatch/kernel_choice.hpp"
#include "emha/simd.hpp"

namespace emha::detail {
namespace isa_avx512vnni {
const KernelTable& variant_table() noexcept;
}
namespace isa_avx2vnni {
const KernelTable& variant_table() noexcept;
}
namespace isa_avx512 {
const KernelTable& variant_table() noexcept;
}
namespace isa_avx2 {
const KernelTable& variant_table() noexcept;
}
namespace isa_sse2 {
const KernelTable& variant_table() noexcept;
}

namespace {

// XCR0: which register states the OS saves on a context switch (bit 1 XMM, 2 YMM, 5-7 AVX-512).
std::uint64_t xcr0() noexcept {
  std::uint32_t lo, hi;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return lo | std::uint64_t(hi) << 32;
}

// AVX2 and FMA3 in the CPU, XMM and YMM state saved by the OS.
bool runs_avx2() noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1;
  if (!fma || !osxsave || !avx || (xcr0() & 0x6) != 0x6) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return b >> 5 & 1;
}

// AVX-512 F, CD, DQ, BW and VL (what the variant is compiled for), and their state saved.
bool runs_avx512() noexcept {
  if (!runs_avx2() || (xcr0() & 0xE6) != 0xE6) return false;
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b >> 16 & 1) && (b >> 28 & 1) && (b >> 17 & 1) && (b >> 30 & 1) && (b >> 31 & 1);
}

// The AVX-512 variant's and AVX512_VNNI (CPUID.(7,0):ECX bit 11).
bool runs_avx512vnni() noexcept {
  unsigned a, b, c, d;
  return runs_avx512() && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c >> 11 & 1);
}

// The AVX2 variant's and AVX-VNNI (CPUID.(7,1):EAX bit 4).
bool runs_avx2vnni() noexcept {
  unsigned a, b, c, d;
  return runs_avx2() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

bool runs_sse2() noexcept { return true; }  // every x86-64 CPU

// AVX-512 at twice AVX2's FLOP per cycle: any Intel core with it; AMD from family 0x1A (Zen 5).
bool avx512_full_width() noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  if (!amd) return true;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned base = a >> 8 & 0xF, family = base == 0xF ? base + (a >> 20 & 0xFF) : base;
  return family >= 0x1A;
}
bool prefers_avx512() noexcept { return runs_avx512() && avx512_full_width(); }
bool never() noexcept { return false; }  // the float kernels' default never picks a VNNI variant

struct Variant {
  const KernelTable& (*table)() noexcept;
  bool (*runs)() noexcept;    // the CPU and OS can run it (select_simd_isa)
  bool (*chosen)() noexcept;  // the default picks it (first that says so, best first)
};
constexpr Variant variants[] = {
    {isa_avx512vnni::variant_table, runs_avx512vnni, never},  // integer-only: float lines avx512's
    {isa_avx2vnni::variant_table, runs_avx2vnni, never},      // integer-only: float lines avx2's
    {isa_avx512::variant_table, runs_avx512, prefers_avx512},
    {isa_avx2::variant_table, runs_avx2, runs_avx2},
    {isa_sse2::variant_table, runs_sse2, runs_sse2},
};

std::atomic<const KernelTable*> g_choice{nullptr};     // set once, then constant
std::atomic<const KernelTable*> g_choice_s8{nullptr};  // the full-integer kernels': the same

const KernelTable* best() noexcept {
  for (const Variant& v : variants)
    if (v.chosen()) return &v.table();
  return &isa_sse2::variant_table();
}

// Sets `choice` to t if it is unset; the table it holds after.
const KernelTable* set_once(std::atomic<const KernelTable*>& choice, const KernelTable* t) noexcept {
  const KernelTable* none = nullptr;
  return choice.compare_exchange_strong(none, t, std::memory_order_acq_rel) ? t : none;
}

}  // namespace

const KernelTable& kernels() noexcept {
  const KernelTable* t = g_choice.load(std::memory_order_acquire);
  return t ? *t : *set_once(g_choice, best());
}

const KernelTable& kernels_s8() noexcept {
  const KernelTable* t = g_choice_s8.load(std::memory_order_acquire);
  if (t) return *t;
  const KernelTable* vnni = runs_avx512vnni()  ? &isa_avx512vnni::variant_table()
                            : runs_avx2vnni() ? &isa_avx2vnni::variant_table()
                                              : &kernels();
  return *set_once(g_choice_s8, vnni);
}

}  // namespace emha::detail

namespace emha {

Status select_simd_isa(const char* isa) noexcept {
  using namespace detail;
  if (!isa) return Status::null_pointer;
  for (const Variant& v : variants) {
    const KernelTable* t = &v.table();
    if (std::strcmp(t->isa, isa) != 0) continue;
    if (!v.runs()) return Status::invalid_argument;
    const KernelTable* none = nullptr;
    if (!g_choice.compare_exchange_strong(none, t, std::memory_order_acq_rel)) {
      return none == t ? Status::ok : Status::invalid_argument;  // or another variant is in use
    }
    set_once(g_choice_s8, t);  // the first pin: the integer kernels too, unless already chosen
    return Status::ok;
  }
  return Status::invalid_argument;
}

}  // namespace emha
