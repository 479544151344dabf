// SPDX-License-Identifier: Apache-2.0
#pragma once
// Error codes returned by every emha call that can fail.

#include <cstdint>

namespace emha {

enum class Status : std::uint8_t {
  ok = 0,
  null_pointer,      // a required pointer was null
  invalid_argument,  // a size is zero, a mask is inconsistent, weights are missing
  too_long,          // a sequence length or batch is above the compile-time maximum
  size_mismatch,     // a caller buffer holds fewer elements than the shapes need
  no_space,          // an arena cannot satisfy the request
  overlap,           // an output buffer shares bytes with an input, another output or the arena
  // A weight blob (emha/io/weight_blob.hpp) that load_weights() refuses:
  truncated,         // fewer bytes than the header or than the blob says it has
  bad_magic,         // not an emha weight blob
  bad_version,       // a format version this build does not read
  misaligned,        // the blob or a tensor is not aligned as the format requires
  bad_checksum,      // the CRC-32 does not match the bytes
  bad_format,        // the tensor table is inconsistent (out of bounds, unknown or repeated id)
  config_mismatch,   // dims, options or tensor shapes differ from the Config
  weight_type_mismatch,  // int8 weights for a Config of float weights, or the reverse
};

// A short constant name ("ok", "too_long", ...) for logs; never null.
const char* to_string(Status s) noexcept;

}  // namespace emha
