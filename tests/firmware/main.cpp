// SPDX-License-Identifier: Apache-2.0
// emha's bare-metal test firmware: kernels against their scalar references over tail sizes,
// MultiHeadAttention against PyTorch's outputs (tests/attention/fixtures, the `small` list) and
// the seed modules' re-implementations (tests/attention/seed_fixtures, its `small` list),
// incremental decoding through a KvCache against the same seed modules, the port's hooks. Every
// buffer is static; the link has the heap gate. The exit status is the number of failed checks
// (capped at 255).

#include <cstring>

#include "emha/port.hpp"
#include "emha/simd.hpp"
#include "runner.hpp"

int main() {
  fw::Line() << "emha firmware: port " << emha::port::name() << ", kernels " << emha::simd_isa()
             << " (" << static_cast<unsigned>(emha::simd_f32_lanes()) << " lane)";
  {
    fw::Suite suite("build");
    if (!fw::check(std::strcmp(emha::simd_isa(), EMHA_EXPECTED_ISA) == 0, "simd_isa() is EMHA_EXPECTED_ISA"))
      fw::Line() << "  simd_isa() = " << emha::simd_isa() << ", expected " << EMHA_EXPECTED_ISA;
  }
  fw::test_port();
  fw::test_gemm();
  fw::test_softmax();
  fw::test_mask();
  fw::test_norm_rope();
  fw::test_parity();
  fw::test_seed_parity();
  fw::test_kv_cache();
  fw::test_export();
  const unsigned failed = fw::failures();
  fw::Line() << "emha firmware: " << fw::checks() << " checks, " << failed << " failed";
  return failed > 255 ? 255 : static_cast<int>(failed);
}
