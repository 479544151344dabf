// SPDX-License-Identifier: Apache-2.0
#pragma once
// One exported fixture's round trip, shared by the host suite (test_roundtrip.cpp,
// doctest; every Linux target under qemu) and the Cortex-M firmware (tests/firmware/
// test_export.cpp). E is export_fixtures::<case>::expected (tests/export/fixtures, written by
// gen_roundtrip.py): the exporter's header (Config, arrays, weights()), the blob's bytes, and the
// real PyTorch module's float32 output and float64 truth on E::query. The layers and outputs are
// static (the firmware has no heap); one case at a time, so the firmware passes one layer buffer
// and one output buffer for every case (RoundTripBuffers), the host a static pair per case.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "emha/emha.hpp"

namespace emha::test {

struct RoundTrip {
  Status loaded = Status::ok, from_blob = Status::ok, from_header = Status::ok;
  bool same_weights = false;  // every blob tensor holds the header's array, bit for bit
  bool same_outputs = false;  // forward() on the blob's weights == on the header's, bit for bit
  double vs_torch = 0;        // max |emha - torch f32| / (1 + |torch|)
  double tolerance = 0;       // the suite's float32 budget for that (seed_support.hpp)
  double mine = 0, theirs = 0;  // max |emha - f64|, max |torch f32 - f64|
  double reference = 0;       // max |emha - the blob's reference| / (tolerance (1 + |ref|)); 0: none
  Status wrong_heads = Status::ok;  // the blob loaded as a Config of 1 head
};

// Storage for one case's layer and outputs: `layer` holds a MultiHeadAttention<E::config>
// (64-byte aligned), `out` the blob's, the header's and the reference's outputs.
struct RoundTripBuffers {
  unsigned char* layer = nullptr;
  std::size_t layer_bytes = 0;
  float* out = nullptr;
  std::size_t out_floats = 0;
};

template <class E>
constexpr std::size_t round_trip_layer_bytes() {
  return sizeof(MultiHeadAttention<typename E::config>);
}
template <class E>
constexpr std::size_t round_trip_out_floats() {
  std::size_t ref = 0;
  if constexpr (E::has_reference) ref = E::reference_rows * E::config::d_model;
  return 2 * E::batch * E::seq_q * E::config::d_model + ref;
}

namespace roundtrip_detail {

template <class C>
struct Slot {
  alignas(MultiHeadAttention<C>) static inline unsigned char bytes[sizeof(MultiHeadAttention<C>)];
};
template <class C>
struct OneHead : C {  // the wrong head count: every exported fixture has 2 or more
  static constexpr std::size_t heads = 1, kv_heads = 1;
};

// The suite's float32 budget (seed_support.hpp's seed_tolerance, from a Config): |emha - torch|
// <= budget * (1 + |torch|) over S_kv keys.
template <class C>
constexpr std::size_t head_dim() {
  return C::head_dim != 0 ? C::head_dim : C::d_model / C::heads;
}

// The widest dot product: the projections (d_model), out_proj (heads * head_dim); QK-norm adds
// a reduction over its width.
template <class C>
double budget(std::size_t s_kv) {
  const std::size_t hd = head_dim<C>(), q_dim = C::heads * hd;
  const std::size_t norm = C::norm != NormPlacement::none ? 2 * C::d_model : 0;
  const std::size_t qk = C::qk_norm == QkNorm::none ? 0 : C::qk_norm == QkNorm::per_head ? 2 * hd : 2 * q_dim;
  const std::size_t widest = C::d_model > q_dim ? C::d_model : q_dim;
  return 4.0 * double(2 * widest + hd + s_kv + norm + qk) / 16777216.0;
}

inline bool same_span(Span<const float> a, Span<const float> b) {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size * sizeof(float)) == 0);
}

template <class E>
Status run(MultiHeadAttention<typename E::config>& mha, float* y) {
  constexpr std::size_t D = E::config::d_model;
  ForwardOptions o;
  o.masks.causal = E::causal;
  o.scale = E::scale;
  const Span<const float> q{E::query, E::batch * E::seq_q * D};
  const Span<const float> k{E::key, E::batch * E::seq_kv * E::config::kdim};
  const Span<const float> v{E::value, E::batch * E::seq_kv * E::config::vdim};
  return mha.forward({E::seq_q, E::seq_kv, E::batch, Layout::batch_first}, q, E::self_attention ? q : k,
                     E::self_attention ? q : v, {y, E::batch * E::seq_q * D}, o);
}

}  // namespace roundtrip_detail

template <class E>
RoundTrip round_trip(Span<const unsigned char> blob, const RoundTripBuffers& buffers) {
  using C = typename E::config;
  using Layer = MultiHeadAttention<C>;
  namespace rd = roundtrip_detail;
  constexpr std::size_t D = C::d_model, n = E::batch * E::seq_q * D;
  RoundTrip r;
  if (buffers.layer_bytes < sizeof(Layer) || reinterpret_cast<std::uintptr_t>(buffers.layer) % alignof(Layer) != 0 ||
      buffers.out_floats < round_trip_out_floats<E>()) {
    r.loaded = Status::no_space;
    return r;
  }
  float* const y_blob = buffers.out;
  float* const y_header = buffers.out + n;
  MhaWeights w;
  BlobReference ref;
  r.loaded = load_weights<C>(blob, w, &ref);
  MhaWeights other;
  r.wrong_heads = load_weights<rd::OneHead<C>>(blob, other);
  if (r.loaded != Status::ok) return r;
  const MhaWeights h = E::header_weights();
  r.same_weights = rd::same_span(w.in_proj_weight, h.in_proj_weight) && rd::same_span(w.q_proj_weight, h.q_proj_weight) &&
                   rd::same_span(w.k_proj_weight, h.k_proj_weight) && rd::same_span(w.v_proj_weight, h.v_proj_weight) &&
                   rd::same_span(w.in_proj_bias, h.in_proj_bias) && rd::same_span(w.out_proj_weight, h.out_proj_weight) &&
                   rd::same_span(w.out_proj_bias, h.out_proj_bias) && rd::same_span(w.norm_weight, h.norm_weight) &&
                   rd::same_span(w.norm_bias, h.norm_bias) && rd::same_span(w.q_norm_weight, h.q_norm_weight) &&
                   rd::same_span(w.k_norm_weight, h.k_norm_weight) &&
                   rd::same_span(w.relative_attention_bias, h.relative_attention_bias);

  Layer* a = new (buffers.layer) Layer;
  r.from_blob = a->set_weights(w);
  if (r.from_blob == Status::ok) r.from_blob = rd::run<E>(*a, y_blob);
  r.from_header = a->set_weights(h);
  if (r.from_header == Status::ok) r.from_header = rd::run<E>(*a, y_header);
  r.same_outputs = std::memcmp(y_blob, y_header, n * sizeof(float)) == 0;

  r.tolerance = rd::budget<C>(E::seq_kv);
  for (std::size_t i = 0; i < n; ++i) {
    const double y = y_blob[i], t = E::out[i], t64 = E::out_f64[i];
    const double scaled = std::fabs(y - t) / (1.0 + std::fabs(t));
    if (scaled > r.vs_torch) r.vs_torch = scaled;
    if (std::fabs(y - t64) > r.mine) r.mine = std::fabs(y - t64);
    if (std::fabs(t - t64) > r.theirs) r.theirs = std::fabs(t - t64);
  }
  if constexpr (E::has_reference) {  // the exporter's own float64 reference, batch 1
    float* const y_ref = buffers.out + 2 * n;
    ForwardOptions o;
    o.masks.causal = E::reference_causal;
    const Span<const float> x{ref.input.data, E::reference_rows * D};
    const double tol = rd::budget<C>(E::reference_rows);
    if (ref.rows != E::reference_rows || ref.input.data == nullptr) {
      r.reference = 1e9;
    } else if (a->forward({E::reference_rows, E::reference_rows, 1, Layout::batch_first}, x, x, x,
                          {y_ref, E::reference_rows * D}, o) != Status::ok) {
      r.reference = 1e9;
    } else {
      for (std::size_t i = 0; i < E::reference_rows * D; ++i) {
        const double want = ref.output.data[i], e = std::fabs(y_ref[i] - want) / (tol * (1.0 + std::fabs(want)));
        if (e > r.reference) r.reference = e;
        if (E::reference_output[i] != ref.output.data[i]) r.reference = 1e9;  // header and blob agree
      }
    }
  }
  a->~Layer();
  return r;
}

// The host's form: a static layer and outputs of the case's own sizes.
template <class E>
RoundTrip round_trip(Span<const unsigned char> blob) {
  static float out[round_trip_out_floats<E>()];
  using Slot = roundtrip_detail::Slot<typename E::config>;
  return round_trip<E>(blob, {Slot::bytes, sizeof Slot::bytes, out, round_trip_out_floats<E>()});
}

}  // namespace emha::test
