// SPDX-License-Identifier: Apache-2.0
#pragma once
// The compiled loader behind load_weights<Config>() (emha/io/weight_blob.hpp), over the Config's
// dimensions as values, and the blob's CRC-32 (IEEE 802.3, reflected, as zlib's crc32).

#include <cstddef>
#include <cstdint>

#include "emha/attention/config.hpp"
#include "emha/attention/options.hpp"
#include "emha/attention/options_s8.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/span.hpp"
#include "emha/status.hpp"

namespace emha {
struct BlobReference;
}  // namespace emha

namespace emha::detail {

Status load_weight_blob(const MhaDims& d, WeightType weight_type, Span<const unsigned char> blob,
                        MhaWeights& out, BlobReference* reference) noexcept;
Status load_weight_blob_s8(const MhaDims& d, Rounding rounding, Span<const unsigned char> blob,
                           MhaS8Weights& out) noexcept;
// crc: the CRC of the bytes before `data` (zlib.crc32(data, crc)), 0 for none.
std::uint32_t crc32(const unsigned char* data, std::size_t n, std::uint32_t crc = 0) noexcept;

}  // namespace emha::detail
