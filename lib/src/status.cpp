// SPDX-License-Identifier: Apache-2.0
#include "emha/status.hpp"

namespace emha {

const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::ok: return "ok";
    case Status::null_pointer: return "null_pointer";
    case Status::invalid_argument: return "invalid_argument";
    case Status::too_long: return "too_long";
    case Status::size_mismatch: return "size_mismatch";
    case Status::no_space: return "no_space";
    case Status::overlap: return "overlap";
    case Status::truncated: return "truncated";
    case Status::bad_magic: return "bad_magic";
    case Status::bad_version: return "bad_version";
    case Status::misaligned: return "misaligned";
    case Status::bad_checksum: return "bad_checksum";
    case Status::bad_format: return "bad_format";
    case Status::config_mismatch: return "config_mismatch";
    case Status::weight_type_mismatch: return "weight_type_mismatch";
  }
  return "unknown";
}

}  // namespace emha
