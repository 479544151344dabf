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
  }
  return "unknown";
}

}  // namespace emha
