// SPDX-License-Identifier: Apache-2.0
// emha/emha.hpp is the one header a user includes: this file includes nothing else of emha and
// names every public function, class and constant of lib/include/emha (detail/ aside), so that a
// header emha.hpp fails to bring in fails this file's compilation. Each is called once with tiny
// arguments and its result checked where one call can show it; the functions whose call would
// change the process (abort, log, start_workers) are only named.

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "emha/emha.hpp"

namespace {

// Names a function without calling it: taking its address needs its declaration (and, linked,
// its definition).
template <class F>
bool named(F* f) {
  return f != nullptr;
}

// A = [[1, 2], [3, 4]] times B = [[5, 6], [7, 8]] (Trans::none) or its transpose.
constexpr float a_f32[4] = {1, 2, 3, 4};
constexpr float b_f32[4] = {5, 6, 7, 8};
constexpr float ab[4] = {19, 22, 43, 50};    // A B
constexpr float abt[4] = {17, 23, 39, 53};   // A B^T
constexpr std::int8_t a_s8[4] = {1, 2, 3, 4};
constexpr std::int8_t b_s8[4] = {5, 6, 7, 8};
constexpr std::int16_t a_s16[4] = {1, 2, 3, 4};
constexpr std::int16_t b_s16[4] = {5, 6, 7, 8};
// The real multiplier 1: 2^30 * 2^(1 - 31).
constexpr emha::QuantizedMultiplier one{1 << 30, 1};

template <class T, class U>
bool same4(const T* x, const U* y) {
  for (int i = 0; i < 4; ++i)
    if (x[i] != static_cast<T>(y[i])) return false;
  return true;
}

// The smallest float layer: d_model 4, two heads of 2, sequences of 2.
struct Tiny : emha::MhaConfig<4, 2, 2> {};
struct TinyLongropeNull : emha::MhaConfig<4, 2, 2> {  // longrope without its factors
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr emha::RopeScalingParams rope_scaling = emha::rope_longrope(nullptr, 4.0f, 64);
};
struct TinyS8 : emha::MhaConfig<4, 2, 2> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};
struct TinyS16x8 : emha::MhaConfig<4, 2, 2> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
};

// Zero projections with an output bias: every output row is out_proj_bias.
struct ZeroWeights {
  float in_w[12 * 4] = {}, in_b[12] = {}, out_w[4 * 4] = {}, out_b[4] = {1, 2, 3, 4};
  emha::MhaWeights get() const {
    emha::MhaWeights w;
    w.in_proj_weight = {in_w, 48};
    w.in_proj_bias = {in_b, 12};
    w.out_proj_weight = {out_w, 16};
    w.out_proj_bias = {out_b, 4};
    return w;
  }
};

bool rows_are_bias(const float* out, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < 4; ++j)
      if (out[r * 4 + j] != float(j + 1)) return false;
  return true;
}

}  // namespace

TEST_CASE("emha.hpp: version, status, port, simd") {
  static_assert(EMHA_VERSION == EMHA_VERSION_MAJOR * 10000 + EMHA_VERSION_MINOR * 100 + EMHA_VERSION_PATCH);
  CHECK(std::strcmp(emha::version(), EMHA_VERSION_STRING) == 0);
  CHECK(std::strcmp(emha::to_string(emha::Status::ok), "ok") == 0);
  // emha/config.hpp's build policy macros.
  static_assert(EMHA_CHECKS == 0 || EMHA_CHECKS == 1);
  EMHA_ASSERT(emha::Status::ok == emha::Status{});

  CHECK(emha::port::name() != nullptr);
  CHECK(emha::port::workers() >= 1);
  (void)emha::port::now_ns();
  (void)emha::port::cycles();
  (void)emha::port::cycles_per_second();
  int calls[2] = {0, 0};
  emha::port::ParallelTask task = [](void* context, std::size_t item, std::size_t) noexcept {
    ++static_cast<int*>(context)[item];
  };
  emha::port::parallel_for(2, 1, task, calls);
  CHECK(calls[0] == 1);
  CHECK(calls[1] == 1);
  CHECK(named(&emha::port::abort));
  CHECK(named(&emha::port::log));
  CHECK(named(&emha::port::start_workers));

  CHECK(emha::simd_isa() != nullptr);
  CHECK(emha::simd_isa_s8() != nullptr);
  CHECK(emha::simd_f32_lanes() >= 1);
  // A variant's name would pin it for every later test: a null name is refused, nothing pinned.
  CHECK(emha::select_simd_isa(nullptr) != emha::Status::ok);
}

TEST_CASE("emha.hpp: Span, arenas") {
  float four[4] = {};
  std::array<float, 4> array{};
  const std::array<float, 4> const_array{};
  const emha::Span<float> from_array(four), from_pointer(four, 2), empty;
  const emha::Span<const float> widened(from_array), from_std(array), from_const_std(const_array);
  CHECK(from_array.size == 4);
  CHECK(from_pointer.size == 2);
  CHECK(empty.data == nullptr);
  CHECK(widened.data == four);
  CHECK(from_std.size == 4);
  CHECK(from_const_std.size == 4);

  static_assert(emha::arena_round_up(5, 4) == 8);
  emha::StaticArena<256> arena;
  static_assert(emha::StaticArena<256>::bytes == 256 && emha::StaticArena<256>::alignment == 64);
  emha::ArenaRef& ref = arena.ref();
  CHECK(ref.capacity() == 256);
  CHECK(ref.base() != nullptr);
  const emha::ArenaRef::Mark mark = ref.mark();
  {
    emha::ArenaScope scope(ref);
    float* f = nullptr;
    CHECK(ref.allocate(4, f) == emha::Status::ok);
    void* bytes = nullptr;
    CHECK(ref.allocate_bytes(8, 8, bytes) == emha::Status::ok);
    CHECK(ref.used() >= 24);
  }
  CHECK(ref.used() == 0);
  CHECK(ref.high_water() >= 24);
  ref.reset_high_water();
  CHECK(ref.high_water() == 0);
  float* f = nullptr;
  CHECK(ref.allocate(4, f, 16) == emha::Status::ok);
  ref.release(mark);
  CHECK(ref.available() == 256);
  CHECK(ref.allocate(4, f) == emha::Status::ok);
  ref.reset();
  CHECK(ref.used() == 0);
  unsigned char buffer[32];
  const emha::ArenaRef view(buffer, sizeof buffer), none;
  CHECK(view.capacity() == 32);
  CHECK(none.capacity() == 0);
  CHECK((emha::ArenaOwnership::owned != emha::ArenaOwnership::caller));
}

TEST_CASE("emha.hpp: float GEMMs") {
  static_assert(emha::gemm_min(2, 3) == 2 && emha::gemm_round_up(5, 4) == 8);
  static_assert(emha::gemm_per_panel(2, 2) && emha::gemm_nc(emha::gemm_kc) >= emha::gemm_max_nr);
  static_assert(emha::gemm_k_block > 0 && emha::gemm_mc > 0 && emha::gemm_max_mr > 0);
  static_assert(emha::gemm_per_panel_max_a_floats > 0 && emha::gemm_block_floats > 0);
  static_assert(emha::gemm_w8a32_scratch_bytes(2, 2, 2) == emha::gemm_f32_scratch_bytes(2, 2, 2));
  static_assert(emha::gemm_w8a32_prepacked_scratch_bytes(1, 2, 2) == 0);
  static_assert(emha::gemm_w8a32_packed_scale_bytes(2) % 64 == 0);
  emha::StaticArena<emha::gemm_f32_scratch_bytes(2, 2, 2)> scratch;
  const emha::GemmOptions options;
  float c[4] = {};

  CHECK(emha::gemm_f32(2, 2, 2, a_f32, 2, b_f32, 2, emha::Trans::none, c, 2, scratch) == emha::Status::ok);
  CHECK(same4(c, ab));
  emha::gemm_f32_rows(2, 2, 2, a_f32, 2, b_f32, 2, emha::Trans::transpose, c, 2);
  CHECK(same4(c, abt));
  alignas(64) float packed[emha::gemm_f32_packed_b_floats(2, 2)];
  CHECK(emha::gemm_f32_pack_b(2, 2, b_f32, 2, emha::Trans::none, packed, sizeof packed / sizeof(float)) ==
        emha::Status::ok);
  CHECK(emha::gemm_f32_prepacked(2, 2, 2, a_f32, 2, packed, sizeof packed / sizeof(float), c, 2) ==
        emha::Status::ok);
  CHECK(same4(c, ab));
  emha::gemm_f32_ref(2, 2, 2, a_f32, 2, b_f32, 2, emha::Trans::transpose, c, 2);
  CHECK(same4(c, abt));
  CHECK(emha::gemm_f32_ref<double>(2, 2, 2, a_f32, 2, b_f32, 2, emha::Trans::none, c, 2, scratch, options) ==
        emha::Status::ok);
  CHECK(same4(c, ab));
  emha::gemm_f32_rows_ref(2, 2, 2, a_f32, 2, b_f32, 2, emha::Trans::transpose, c, 2);
  CHECK(same4(c, abt));

  // W8A32: W = B as int8 [n x k], scales 1: C = A W^T.
  const float scale[2] = {1, 1};
  CHECK(emha::gemm_w8a32(2, 2, 2, a_f32, 2, b_s8, 2, scale, c, 2, scratch) == emha::Status::ok);
  CHECK(same4(c, abt));
  alignas(64) std::int8_t packed_w[emha::gemm_w8a32_packed_b_bytes(2, 2)];
  CHECK(emha::gemm_w8a32_pack_b(2, 2, b_s8, 2, scale, packed_w, sizeof packed_w) == emha::Status::ok);
  CHECK(emha::gemm_w8a32_prepacked(2, 2, 2, a_f32, 2, packed_w, sizeof packed_w, c, 2) == emha::Status::ok);
  CHECK(same4(c, abt));
  emha::gemm_w8a32_rows(2, 2, 2, a_f32, 2, b_s8, 2, scale, emha::Trans::transpose, c, 2);
  CHECK(same4(c, abt));
  emha::gemm_w8a32_ref(2, 2, 2, a_f32, 2, b_s8, 2, scale, c, 2);
  CHECK(same4(c, abt));
  CHECK(emha::gemm_w8a32_ref(2, 2, 2, a_f32, 2, b_s8, 2, scale, c, 2, scratch, options) == emha::Status::ok);
  CHECK(same4(c, abt));
  emha::gemm_w8a32_rows_ref(2, 2, 2, a_f32, 2, b_s8, 2, scale, emha::Trans::transpose, c, 2);
  CHECK(same4(c, abt));
}

TEST_CASE("emha.hpp: integer products and requantization") {
  std::int32_t c32[4] = {};
  emha::gemm_s8(2, 2, 2, a_s8, 2, b_s8, 2, c32, 2);
  CHECK(same4(c32, abt));
  std::int16_t stage[emha::gemm_s8_stage_len(2)];
  static_assert(emha::gemm_s8_stage_rows > 0);
  emha::gemm_s8_staged(2, 2, 2, a_s8, 2, b_s8, 2, c32, 2, stage, emha::gemm_s8_stage_len(2));
  CHECK(same4(c32, abt));
  emha::gemm_s8_ref(2, 2, 2, a_s8, 2, b_s8, 2, c32, 2);
  CHECK(same4(c32, abt));
  emha::gemm_s8_staged_ref(2, 2, 2, a_s8, 2, b_s8, 2, c32, 2, stage, emha::gemm_s8_stage_len(2));
  CHECK(same4(c32, abt));
  std::int32_t sums[2] = {};
  emha::row_sums_s8(2, 2, a_s8, 2, sums);
  CHECK((sums[0] == 3 && sums[1] == 7));
  emha::row_sums_s8_ref(2, 2, a_s8, 2, sums);
  CHECK((sums[0] == 3 && sums[1] == 7));

  std::int64_t c64[4] = {};
  emha::gemm_s16(2, 2, 2, a_s16, 2, b_s16, 2, c64, 2);
  CHECK(same4(c64, abt));
  emha::gemm_s16x8(2, 2, 2, a_s16, 2, b_s8, 2, c64, 2);
  CHECK(same4(c64, abt));
  emha::gemm_s16_ref(2, 2, 2, a_s16, 2, b_s16, 2, c64, 2);
  CHECK(same4(c64, abt));
  emha::gemm_s16x8_ref(2, 2, 2, a_s16, 2, b_s8, 2, c64, 2);
  CHECK(same4(c64, abt));

  static_assert(emha::requantize(17, one) == 17);
  static_assert(emha::requantize<emha::Rounding::single_rounding>(17, one) == 17);
  static_assert(emha::requantize_s64(17, one) == 17);
  static_assert(emha::saturating_rounding_doubling_high_mul(1 << 30, 1 << 30) == 1 << 29);
  static_assert(emha::rounding_divide_by_pot(5, 1) == 3);

  const emha::QuantizedMultiplier q[2] = {one, one};
  const std::int32_t acc[4] = {17, 23, 39, 53};
  std::int8_t y8[4] = {};
  emha::requantize_s8(4, acc, nullptr, q, 0, emha::Rounding::double_rounding, 0, y8, 1);
  CHECK(same4(y8, abt));
  emha::requantize_s8_ref(4, acc, nullptr, q, 0, emha::Rounding::single_rounding, 0, y8, 1);
  CHECK(same4(y8, abt));
  emha::requantize_s8_channels(2, 2, acc, 2, nullptr, q, emha::Rounding::double_rounding, 0, y8, 2, 1);
  CHECK(same4(y8, abt));
  emha::requantize_s8_channels_ref(2, 2, acc, 2, nullptr, q, emha::Rounding::double_rounding, 0, y8, 2, 1);
  CHECK(same4(y8, abt));
  const std::int64_t acc64[4] = {17, 23, 39, 53};
  std::int16_t y16[4] = {};
  emha::requantize_s16(4, acc64, nullptr, q, 0, y16, 1);
  CHECK(same4(y16, abt));
  emha::requantize_s16_ref(4, acc64, nullptr, q, 0, y16, 1);
  CHECK(same4(y16, abt));

  // TFLite's FULLY_CONNECTED and BATCH_MATMUL, zero points 0 and multipliers 1.
  emha::fully_connected_s8_ref(2, 2, 2, a_s8, 2, 0, b_s8, 2, nullptr, q, 0, y8, 2);
  CHECK(same4(y8, abt));
  emha::batch_matmul_s8_ref<emha::Rounding::single_rounding>(2, 2, 2, a_s8, 2, 0, b_s8, 2, 0, one, 0, y8, 2);
  CHECK(same4(y8, abt));

  // gemmlowp's fixed point (Q0.31 unless said).
  CHECK(emha::fixed_point::mul(1 << 30, 1 << 30) == 1 << 29);
  CHECK(emha::fixed_point::multiply_by_pot<1>(3) == 6);
  CHECK(emha::fixed_point::rescale<0, 0>(5) == 5);
  CHECK(emha::fixed_point::rounding_half_sum(2, 4) == 3);
  CHECK(emha::fixed_point::exp_on_negative_values<5>(0) == std::numeric_limits<std::int32_t>::max());
  CHECK(emha::fixed_point::exp_on_interval_between_negative_one_quarter_and_0_excl(-(1 << 28)) > 1 << 30);
  CHECK(emha::fixed_point::one_over_one_plus_x_for_x_in_0_1(0) > 1 << 30);
  int bits_over_unit = 0;
  CHECK(emha::fixed_point::reciprocal<12>(1 << 19, bits_over_unit) > 0);
}

TEST_CASE("emha.hpp: softmaxes") {
  const float x[2] = {0, 0};
  float y[2] = {};
  // A variant's exp need not round exp(0) to 1 exactly: near, not equal.
  emha::softmax_f32(1, 2, x, 2, y, 2);
  CHECK(y[0] == doctest::Approx(0.5));
  CHECK(y[1] == doctest::Approx(0.5));
  emha::softmax_f32_ref(1, 2, x, 2, y, 2, emha::SoftmaxOptions{});
  CHECK(y[0] == doctest::Approx(0.5));
  CHECK(y[1] == doctest::Approx(0.5));
  for (int ref = 0; ref < 2; ++ref) {
    float s[2] = {0, 0}, row_max = -std::numeric_limits<float>::infinity(), row_sum = 0, o = 0;
    if (ref)
      emha::softmax_online_update_f32_ref(1, 2, s, 2, &row_max, &row_sum, &o, 1, 1);
    else
      emha::softmax_online_update_f32(1, 2, s, 2, &row_max, &row_sum, &o, 1, 1);
    CHECK(row_max == 0.0f);
    CHECK(s[0] == doctest::Approx(1.0));
    CHECK(row_sum == doctest::Approx(2.0));
    o = 4;  // s times V, by the caller
    if (ref)
      emha::softmax_online_finish_f32_ref(1, 1, &row_sum, &o, 1);
    else
      emha::softmax_online_finish_f32(1, 1, &row_sum, &o, 1);
    CHECK(o == doctest::Approx(2.0));
  }

  // Equal int8 or int16 inputs: equal probabilities, 1/2 each.
  const std::int8_t x8[2] = {3, 3};
  std::int8_t y8[2] = {}, row[2] = {};
  const emha::SoftmaxS8Params p8{1 << 30, 0, -64};
  emha::softmax_s8_ref(1, 2, x8, 2, p8, y8, 2);
  CHECK((y8[0] == 0 && y8[1] == 0));
  static emha::SoftmaxS8Table table;
  emha::softmax_s8_table(p8, table);
  emha::softmax_s8_row(2, x8, table, row);
  CHECK((row[0] == y8[0] && row[1] == y8[1]));
  std::int32_t exps[2] = {}, exps_ref[2] = {};
  emha::softmax_s8_row(2, x8, table, row, exps);
  CHECK((row[0] == y8[0] && row[1] == y8[1]));
  CHECK(emha::softmax_s8_exps(2, x8, table.exp, exps) == emha::softmax_s8_exps_ref(2, x8, table.exp, exps_ref));
  CHECK((exps[0] == exps_ref[0] && exps[1] == exps_ref[1]));

  const std::int16_t x16[2] = {5, 5};
  std::int16_t y16[2] = {};
  emha::softmax_s16(1, 2, x16, 2, emha::SoftmaxS16Params{{1 << 30, 0}}, y16, 2);
  CHECK((y16[0] == y16[1] && y16[0] > 16000 && y16[0] <= 16384));
}

TEST_CASE("emha.hpp: masks and position kernels") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(emha::mask_neg_inf == -inf);
  const bool first[2] = {true, false};
  const float add[2] = {1, 2};
  for (int ref = 0; ref < 2; ++ref) {
    float s[4] = {};
    ref ? emha::mask_causal_f32_ref(2, 2, 0, s, 2) : emha::mask_causal_f32(2, 2, 0, s, 2);
    CHECK((s[1] == -inf && s[0] == 0 && s[2] == 0 && s[3] == 0));
    float capped[1] = {inf};
    emha::mask_softcap_f32(1, 1, 2.0f, capped, 1);
    CHECK(capped[0] == 2.0f);
    float w[4] = {};
    ref ? emha::mask_window_f32_ref(2, 2, 0, 1, w, 2) : emha::mask_window_f32(2, 2, 0, 1, w, 2);
    CHECK((w[2] == -inf && w[0] == 0 && w[3] == 0));
    float v[4] = {};
    ref ? emha::mask_key_valid_f32_ref(2, 2, 1, v, 2) : emha::mask_key_valid_f32(2, 2, 1, v, 2);
    CHECK((v[1] == -inf && v[3] == -inf && v[0] == 0));
    float k[4] = {};
    ref ? emha::mask_key_ignore_f32_ref(2, 2, first, k, 2) : emha::mask_key_ignore_f32(2, 2, first, k, 2);
    CHECK((k[0] == -inf && k[2] == -inf && k[1] == 0));
    float b[4] = {};
    ref ? emha::mask_bool_f32_ref(2, 2, first, 0, b, 2) : emha::mask_bool_f32(2, 2, first, 0, b, 2);
    CHECK((b[0] == -inf && b[1] == 0));
    float additive[4] = {5, 5, 5, 5};
    ref ? emha::mask_bool_to_additive_f32_ref(2, 2, first, 0, additive, 2)
        : emha::mask_bool_to_additive_f32(2, 2, first, 0, additive, 2);
    CHECK((additive[0] == -inf && additive[1] == 0));
    float plus[4] = {};
    ref ? emha::mask_add_f32_ref(2, 2, add, 0, plus, 2) : emha::mask_add_f32(2, 2, add, 0, plus, 2);
    CHECK((plus[1] == 2 && plus[2] == 1));
    float alibi[4] = {};
    ref ? emha::mask_alibi_f32_ref(2, 2, 0, 1.0f, alibi, 2) : emha::mask_alibi_f32(2, 2, 0, 1.0f, alibi, 2);
    CHECK((alibi[0] == 0 && alibi[1] == -1 && alibi[2] == -1));
  }
  float attend[4] = {};
  emha::mask_attend_f32(2, 2, first, 0, 1, attend, 2);  // keep key 0 only
  CHECK((attend[1] == -inf && attend[0] == 0));
  float slopes[2] = {};
  CHECK(emha::alibi_slopes(2, slopes) == emha::Status::ok);
  CHECK((slopes[0] == 0.0625f && slopes[1] == 0.00390625f));
  const emha::MaskView<float> view{add, 2, 0, 1};  // strides inside add[2]
  CHECK(view.block(1, 1) == add + 1);

  // T5's relative position bias.
  CHECK(emha::relative_bucket(0, 32, 128, true) == 0);
  float buckets[129] = {}, bias[32] = {2};
  CHECK(emha::relative_bucket_table_f32(32, 128, true, buckets) == emha::Status::ok);
  emha::RelativeBias rb;
  rb.distance_bucket = buckets;
  rb.table = bias;
  rb.buckets = 32;
  rb.max_distance = 128;
  rb.heads = 1;
  rb.bidirectional = true;
  float score = 0;
  emha::mask_relative_bias_f32(1, 1, 0, rb, 0, &score, 1);
  CHECK(score == 2.0f);

  // RoPE and xPos at position 0 leave a row as it is; the table's angle 0 is (1, 0).
  static_assert(emha::rope_table_floats(2, 2) == 2);
  float cos[2], sin[2];
  CHECK(emha::rope_table_f32(2, 2, 10000.0f, cos, sin) == emha::Status::ok);
  CHECK((cos[0] == 1.0f && sin[0] == 0.0f));
  const emha::RopeTable t{cos, sin, 2, 2};
  float row[2] = {1, 2};
  CHECK(emha::rope_f32(1, 1, 2, emha::RopePairing::half, 0, t, row, 2) == emha::Status::ok);
  CHECK(emha::rope_f32_ref(1, 1, 2, emha::RopePairing::interleaved, 0, t, row, 2) == emha::Status::ok);
  CHECK((row[0] == 1.0f && row[1] == 2.0f));
  double exact[2] = {};
  emha::rope_f64(1, 1, 2, 2, emha::RopePairing::half, 0, 10000.0, row, 2, exact);
  CHECK((exact[0] == 1.0 && exact[1] == 2.0));
  std::size_t ia = 0, ib = 0;
  emha::rope_pair(emha::RopePairing::half, 4, 1, ia, ib);
  CHECK((ia == 1 && ib == 3));
  float pa = 1, pb = 2;
  emha::rope_rotate_pair(pa, pb, 1.0f, 0.0f);
  CHECK((pa == 1.0f && pb == 2.0f));
  // RoPE scaling: linear halves inv_freq; yarn's attention factor scales the table's angle 0.
  float inv = 0, factor = 0;
  CHECK(emha::rope_inv_freq_f32(2, 10000.0f, emha::rope_linear(2.0f), &inv, &factor) == emha::Status::ok);
  CHECK((inv == 0.5f && factor == 1.0f));
  float scos[2], ssin[2];
  CHECK(emha::rope_table_scaled_f32(2, 2, 10000.0f, emha::rope_yarn(4.0f, 64, 32.0f, 1.0f, 2.0f), scos, ssin) ==
        emha::Status::ok);
  CHECK((scos[0] == 2.0f && ssin[0] == 0.0f));
  constexpr float shorts[1] = {1.0f};
  static_assert(emha::rope_dynamic(2.0f, 64).type == emha::RopeScaling::dynamic);
  static_assert(emha::rope_longrope(shorts, 4.0f, 64).type == emha::RopeScaling::longrope);
  static_assert(emha::rope_llama3(8.0f, 1.0f, 4.0f, 8192).type == emha::RopeScaling::llama3);
  CHECK(emha::xpos_f32(1, 1, 2, 1, false, 512.0f, t, row, 2) == emha::Status::ok);
  CHECK(emha::xpos_centred_f32(1, 1, 2, 0, 1, true, 512.0f, t, row, 2) == emha::Status::ok);
  float pe[2] = {};
  CHECK(emha::sinusoidal_table_f32(1, 2, pe) == emha::Status::ok);
  CHECK((pe[0] == 0.0f && pe[1] == 1.0f));
}

TEST_CASE("emha.hpp: norms and int8 rows") {
  const float x[2] = {1, 3}, twos[2] = {2, 2};
  float y[2] = {};
  emha::layer_norm_f32(1, 2, x, 2, y, 2, nullptr, nullptr, 0.0f);
  CHECK((y[0] == -1.0f && y[1] == 1.0f));
  emha::layer_norm_f32_ref(1, 2, x, 2, y, 2, nullptr, nullptr, 0.0f);
  CHECK((y[0] == -1.0f && y[1] == 1.0f));
  emha::rms_norm_f32(1, 2, twos, 2, y, 2, nullptr, 0.0f);
  CHECK((y[0] == 1.0f && y[1] == 1.0f));
  emha::rms_norm_f32_ref<double>(1, 2, twos, 2, y, 2, nullptr, 0.0f);
  CHECK((y[0] == 1.0f && y[1] == 1.0f));

  const float row[2] = {127.0f, -63.5f};
  std::int8_t q[2] = {};
  float scale = 0;
  emha::quantize_rows_s8(1, 2, row, 2, q, 2, &scale);
  CHECK((scale == 1.0f && q[0] == 127 && q[1] == -64));
  emha::dequantize_rows_s8(1, 2, q, 2, &scale, y, 2);
  CHECK((y[0] == 127.0f && y[1] == -64.0f));
  emha::dequantize_rows_s8_ref(1, 2, q, 2, &scale, y, 2);
  CHECK((y[0] == 127.0f && y[1] == -64.0f));
}

TEST_CASE("emha.hpp: the float layer, its KvCache and its weight blob") {
  static emha::MultiHeadAttention<Tiny> mha;
  static_assert(emha::MultiHeadAttention<Tiny>::arena_bytes > 0);
  static_assert(emha::MultiHeadAttention<Tiny>::packed_weight_bytes > 0);
  static_assert(emha::MultiHeadAttention<Tiny>::position_table_bytes == 0);
  static_assert(emha::MultiHeadAttention<Tiny>::unit_offset_floats == 0);
  const ZeroWeights zero;
  REQUIRE(mha.set_weights(zero.get()) == emha::Status::ok);
  const float in[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out[2 * 4] = {};
  const emha::AttentionShape self{2, 2, 1, emha::Layout::batch_first};
  emha::ForwardOptions options;
  options.masks.causal = true;
  CHECK(mha.forward(self, in, in, in, out, options) == emha::Status::ok);
  CHECK(rows_are_bias(out, 2));
  CHECK(mha.forward_reference(self, in, in, in, out) == emha::Status::ok);
  CHECK(rows_are_bias(out, 2));
  static emha::MultiHeadAttention<TinyLongropeNull> no_factors;  // its table could not be filled
  REQUIRE(no_factors.set_weights(zero.get()) == emha::Status::ok);
  float untouched[2 * 4] = {9, 9, 9, 9, 9, 9, 9, 9};
  CHECK(no_factors.forward(self, in, in, in, untouched, options) == emha::Status::invalid_argument);
  CHECK(untouched[0] == 9.0f);
  CHECK(mha.arena().capacity() == emha::MultiHeadAttention<Tiny>::arena_bytes);

  // A caller's arena.
  static emha::StaticArena<emha::MultiHeadAttention<Tiny>::arena_bytes> arena;
  static emha::MultiHeadAttention<Tiny, emha::ArenaOwnership::caller> on_arena(arena);
  static emha::MultiHeadAttention<Tiny, emha::ArenaOwnership::caller> on_ref(arena.ref());
  CHECK(on_arena.forward(self, in, in, in, out) == emha::Status::invalid_argument);  // no weights
  CHECK(on_ref.set_weights(emha::MhaWeights{}) != emha::Status::ok);

  // Decoding through a KvCache: a prefill of one token, then one more.
  static emha::KvCache<Tiny> cache;
  static_assert(emha::KvCache<Tiny>::capacity == 2 && emha::KvCache<Tiny>::max_batch == 1);
  static_assert(emha::KvCache<Tiny>::window == 0 && emha::KvCache<Tiny>::kv_type == emha::KvType::f32);
  static_assert(emha::KvCache<Tiny>::bytes == emha::KvCache<Tiny>::floats * sizeof(float));
  static_assert(emha::KvCache<Tiny>::row_floats == 2 * emha::KvCache<Tiny>::kv_dim);
  static_assert(emha::KvCache<Tiny>::scale_count == 0);
  for (std::size_t step = 0; step < 2; ++step) {
    const emha::AttentionShape decode{1, cache.keys(1), 1, emha::Layout::batch_first};
    CHECK(decode.seq_kv == step + 1);
    CHECK(cache.first_key(0, 1) == 0);
    CHECK(mha.forward(decode, {in + 4 * step, 4}, {out, 4}, cache) == emha::Status::ok);
    CHECK(rows_are_bias(out, 1));
    CHECK(cache.length(0) == step + 1);
  }
  CHECK(cache.truncate(0, 1) == emha::Status::ok);
  const emha::AttentionShape again{1, cache.keys(1), 1, emha::Layout::batch_first};
  CHECK(mha.forward_reference(again, {in, 4}, {out, 4}, cache) == emha::Status::ok);
  CHECK(rows_are_bias(out, 1));
  cache.reset();
  CHECK(cache.length() == 0);
  CHECK(cache.view().capacity == 2);
  CHECK(cache.view_read().capacity == 2);

  // Static K/V in a cache of the caller's storage: cross-attention.
  static float storage[emha::KvCache<Tiny, 2, 1, emha::ArenaOwnership::caller>::floats];
  static emha::KvCache<Tiny, 2, 1, emha::ArenaOwnership::caller> memory(storage);
  const emha::AttentionShape kv{1, 2, 1, emha::Layout::batch_first};
  CHECK(mha.project_kv(kv, in, in, memory) == emha::Status::ok);
  CHECK(memory.length(0) == 2);
  CHECK(mha.forward_static_kv(kv, {in, 4}, {out, 4}, memory) == emha::Status::ok);
  CHECK(rows_are_bias(out, 1));

  // The weight blob: an empty one is refused, nothing read.
  static_assert(emha::blob_version >= emha::blob_version_f32 && emha::blob_version_f32 > emha::blob_oldest_version);
  static_assert(emha::blob_header_bytes > emha::blob_header_bytes_v1);
  static_assert(emha::blob_entry_bytes == 16 && emha::blob_tensor_align == 64 && emha::blob_max_tensors > 0);
  static_assert(static_cast<std::uint32_t>(emha::BlobTensor::in_proj_weight) == 1);
  emha::MhaWeights loaded;
  emha::BlobReference reference;
  CHECK(emha::load_weights<Tiny>(emha::Span<const unsigned char>{}, loaded, &reference) != emha::Status::ok);
  emha::MhaS8Weights loaded_s8;
  CHECK(emha::load_weights<TinyS8>(emha::Span<const unsigned char>{}, loaded_s8) != emha::Status::ok);
}

TEST_CASE("emha.hpp: the int8 and 16x8 layers") {
  static emha::MultiHeadAttention<TinyS8> s8;
  static_assert(emha::MultiHeadAttention<TinyS8>::arena_bytes > 0);
  const std::int8_t in8[4] = {};
  std::int8_t out8[4] = {};
  const emha::AttentionShape one_row{1, 1, 1, emha::Layout::seq_first};
  CHECK(s8.set_weights(emha::MhaS8Weights{}) != emha::Status::ok);  // empty projections
  CHECK(s8.forward(one_row, in8, in8, in8, out8, emha::ForwardOptionsS8{}) == emha::Status::invalid_argument);
  CHECK(s8.forward_reference(one_row, in8, in8, in8, out8) == emha::Status::invalid_argument);
  const emha::ProjectionS8 projection{};
  CHECK(projection.weight.size == 0);

  static emha::MultiHeadAttention<TinyS16x8> s16;
  static_assert(emha::MultiHeadAttention<TinyS16x8>::arena_bytes > 0);
  const std::int16_t in16[4] = {};
  std::int16_t out16[4] = {};
  CHECK(s16.set_weights(emha::MhaS16x8Weights{}) != emha::Status::ok);
  CHECK(s16.forward(one_row, in16, in16, in16, out16, emha::ForwardOptionsS16x8{}) ==
        emha::Status::invalid_argument);
  CHECK(s16.forward_reference(one_row, in16, in16, in16, out16) == emha::Status::invalid_argument);
  const emha::ProjectionS16x8 projection16{};
  CHECK(projection16.bias.size == 0);
}
