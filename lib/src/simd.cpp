#include "emha/simd.hpp"

#include "simd_arch.hpp"

namespace emha {

const char* simd_isa() noexcept { return simd::isa; }
std::size_t simd_f32_lanes() noexcept { return simd::lanes; }

}  // namespace emha
