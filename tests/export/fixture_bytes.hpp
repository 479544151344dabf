// SPDX-License-Identifier: Apache-2.0
#pragma once
// A blob the exporter wrote into tests/export/fixtures (EMHA_EXPORT_FIXTURES), read from disk like
// a user's, its bytes 64-byte aligned as a mapped file would be.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "emha/span.hpp"

namespace emha::test {

struct FileBytes {
  std::vector<unsigned char> storage;
  Span<const unsigned char> span;
};

inline FileBytes read_fixture(const char* name) {
  std::ifstream f(std::string(EMHA_EXPORT_FIXTURES) + "/" + name, std::ios::binary);
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  FileBytes b;
  b.storage.resize(bytes.size() + 64);
  const std::size_t shift = (64 - reinterpret_cast<std::uintptr_t>(b.storage.data()) % 64) % 64;
  std::copy(bytes.begin(), bytes.end(), b.storage.begin() + std::ptrdiff_t(shift));
  b.span = {b.storage.data() + shift, bytes.size()};
  return b;
}

}  // namespace emha::test
