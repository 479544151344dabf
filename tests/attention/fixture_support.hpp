// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads a generated PyTorch fixture (tests/attention/fixtures/*.hpp) into emha's API types.

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "emha/emha.hpp"

namespace emha::test {

// A fixture member is either an array (present) or a null pointer (absent).
template <class A>
auto span_of(const A& a) {
  if constexpr (std::is_array_v<A>) {
    return Span<const std::remove_extent_t<A>>{a, std::extent_v<A>};
  } else {
    return Span<std::remove_pointer_t<A>>{};
  }
}

// The fixture's sizes as a Config; Prepack = false reads the weights in place.
template <class F, bool Prepack = true>
struct FixtureConfig : MhaConfig<F::d_model, F::heads, F::seq_q, F::seq_kv> {
  static constexpr std::size_t kdim = F::kdim;
  static constexpr std::size_t vdim = F::vdim;
  static constexpr std::size_t max_batch = F::batch;
  static constexpr bool bias = F::bias;
  static constexpr bool prepack_weights = Prepack;
};

template <class F>
MhaWeights fixture_weights() {
  MhaWeights w;
  w.in_proj_weight = span_of(F::in_proj_weight);
  w.q_proj_weight = span_of(F::q_proj_weight);
  w.k_proj_weight = span_of(F::k_proj_weight);
  w.v_proj_weight = span_of(F::v_proj_weight);
  w.in_proj_bias = span_of(F::in_proj_bias);
  w.out_proj_weight = span_of(F::out_proj_weight);
  w.out_proj_bias = span_of(F::out_proj_bias);
  return w;
}

template <class F>
AttentionShape fixture_shape() {
  return {F::seq_q, F::seq_kv, F::batch, F::batch_first ? Layout::batch_first : Layout::seq_first};
}

template <class F>
AttentionMasks fixture_masks() {
  AttentionMasks m;
  m.causal = F::causal;
  m.key_ignored = span_of(F::key_padding_mask);
  m.attn_masked = span_of(F::attn_mask_bool);
  m.attn_additive = span_of(F::attn_mask_float);
  m.attn_mask_shape = F::attn_mask_per_head ? MaskShape::per_batch_head : MaskShape::shared;
  return m;
}

// Float32 error budget of one MHA output against another float32 implementation (torch): each
// side runs a chain of dot products of lengths max(d_model, kdim, vdim) (projection), d_k
// (scores), S_kv (P*V) and d_model (output projection); a length-n float32 dot product is
// within n*u*sum|terms| (Higham), and with these fixtures' O(1) inputs and O(1/sqrt(n)) weights
// sum|terms| stays below 2 * (1 + |ref|). Both sides err, hence the factor 2 * 2:
//   |emha - torch| <= 4 * n_chain * u * (1 + |ref|).
template <class F>
double fixture_tolerance() {
  const std::size_t dmax = F::d_model > F::kdim ? (F::d_model > F::vdim ? F::d_model : F::vdim)
                                                : (F::kdim > F::vdim ? F::kdim : F::vdim);
  const double n_chain = double(dmax + F::d_model / F::heads + F::seq_kv + F::d_model);
  return 4.0 * n_chain / 16777216.0;
}

// Max over elements of |got - ref| / (1 + |ref|); a NaN counts as infinite.
inline double max_scaled_error(const float* got, const float* ref, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = std::fabs(double(got[i]) - double(ref[i])) / (1.0 + std::fabs(double(ref[i])));
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : (e > worst ? e : worst);
  }
  return worst;
}

// Error of a float32 result against the fixture's float64 truth (out_f64): max and root mean
// square of |got - truth| over the elements.
struct TruthError {
  double max = 0, rms = 0;
};
inline TruthError truth_error(const float* got, const double* truth, std::size_t n) {
  TruthError e;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(got[i]) - truth[i]);
    e.max = std::isnan(d) ? std::numeric_limits<double>::infinity() : (d > e.max ? d : e.max);
    e.rms += d * d;
  }
  e.rms = std::sqrt(e.rms / double(n ? n : 1));
  return e;
}

// When F's key padding mask ignores a suffix of every sequence, writes the valid lengths
// (F::batch of them) and returns true; false otherwise (or without a padding mask).
template <class F>
bool prefix_lengths(std::size_t* lengths) {
  if constexpr (std::is_array_v<decltype(F::key_padding_mask)>) {
    for (std::size_t b = 0; b < F::batch; ++b) {
      const bool* row = F::key_padding_mask + b * F::seq_kv;
      std::size_t len = 0;
      while (len < F::seq_kv && !row[len]) ++len;
      for (std::size_t j = len; j < F::seq_kv; ++j)
        if (!row[j]) return false;
      lengths[b] = len;
    }
    return true;
  } else {
    (void)lengths;
    return false;
  }
}

}  // namespace emha::test
