// SPDX-License-Identifier: Apache-2.0
// CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial and final value 0xFFFFFFFF), the
// checksum of zlib.crc32 and of the weight blob (emha/io/weight_blob.hpp). One table lookup per
// byte; the table is a compile-time constant (read-only data, no state).

#include <array>
#include <cstddef>
#include <cstdint>

#include "emha/io/weight_blob.hpp"

namespace emha::detail {
namespace {

constexpr std::array<std::uint32_t, 256> crc_table() noexcept {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<std::uint32_t, 256> table = crc_table();

}  // namespace

std::uint32_t crc32(const unsigned char* data, std::size_t n, std::uint32_t crc) noexcept {
  std::uint32_t c = crc ^ 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace emha::detail
