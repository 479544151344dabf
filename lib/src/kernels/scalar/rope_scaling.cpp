// SPDX-License-Identifier: Apache-2.0
// RoPE scaling (emha/kernels/rope.hpp): each rope_type's inv_freq and attention factor, step for
// step as transformers computes them (huggingface/transformers src/transformers/
// modeling_rope_utils.py, _compute_*_parameters @ef468064, with the later form's yarn keys truncate
// and original_max_position_embeddings, whose defaults are @ef468064's behaviour). Its tensors are
// float32 and every tensor op rounds once; its pure-Python values are double and become float32
// where they meet a tensor (torch casts a Python scalar to the tensor's dtype). Two torch details
// matter for the last bit: `x / t` with a Python x is t.reciprocal() * x (two roundings), and
// `t / x` is one division. Compiled once, no instruction-set variants: it runs when a layer is
// constructed.

#include <cmath>

#include "emha/kernels/rope.hpp"

namespace emha {
namespace {

constexpr double pi = 3.14159265358979323846;

// What the per-pair formula needs besides i: the base (dynamic's rescaled one), yarn's ramp.
struct Prepared {
  float base = 0;
  float ramp_min = 0, ramp_span = 1;  // yarn: (i - min) / span, clamped to [0, 1]
  float attention_factor = 1;
};

// yarn's find_correction_dim: the dim whose wavelength fits `rotations` times in `positions`.
double correction_dim(double rotations, double d_rot, double base, double positions) {
  return (d_rot * std::log(positions / (rotations * 2 * pi))) / (2 * std::log(base));
}

Status prepare(std::size_t d_rot, float base, const RopeScalingParams& s, Prepared& p) noexcept {
  if (d_rot == 0 || d_rot % 2 != 0 || !(base > 0.0f) || !(s.factor > 0.0f)) return Status::invalid_argument;
  const bool needs_original = s.type != RopeScaling::none && s.type != RopeScaling::linear;
  if (needs_original && s.original_max_positions == 0) return Status::invalid_argument;
  if (s.type == RopeScaling::llama3 && !(s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0.0f))
    return Status::invalid_argument;
  if (s.type == RopeScaling::dynamic && d_rot == 2) return Status::invalid_argument;  // d / (d - 2)
  if (s.type == RopeScaling::longrope && !s.short_factor) return Status::null_pointer;
  if (!(s.attention_factor >= 0.0f)) return Status::invalid_argument;
  p.base = base;
  const double f = s.factor, original = double(s.original_max_positions), d = double(d_rot);
  if (s.type == RopeScaling::dynamic) {
    // base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2)),
    // seq_len = max_position_embeddings: every length the Config allows.
    p.base = float(double(base) * std::pow(f * original / original - (f - 1), d / (d - 2)));
  } else if (s.type == RopeScaling::yarn) {
    double low = correction_dim(s.beta_fast, d, base, original);
    double high = correction_dim(s.beta_slow, d, base, original);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = low < 0 ? 0 : low;
    high = high > d - 1 ? d - 1 : high;
    if (low == high) high += 0.001;  // linear_ramp_factor's guard
    p.ramp_min = float(low);
    p.ramp_span = float(high - low);
    p.attention_factor = float(s.attention_factor != 0.0f ? double(s.attention_factor)
                               : f <= 1 ? 1.0 : 0.1 * std::log(f) + 1.0);
  } else if (s.type == RopeScaling::longrope) {
    p.attention_factor = float(s.attention_factor != 0.0f ? double(s.attention_factor)
                               : f <= 1 ? 1.0 : std::sqrt(1 + std::log(f) / std::log(original)));
  }
  return Status::ok;
}

float inv_freq_at(std::size_t i, std::size_t d_rot, const RopeScalingParams& s, const Prepared& p) noexcept {
  // base ** (arange(0, dim, 2).float() / dim), then its reciprocal.
  const float pos_freq = std::pow(p.base, float(2 * i) / float(d_rot));
  const float inv = 1.0f / pos_freq;
  switch (s.type) {
    case RopeScaling::linear: return inv / s.factor;
    case RopeScaling::longrope: return 1.0f / (s.short_factor[i] * pos_freq);
    case RopeScaling::yarn: {
      const float interpolation = 1.0f / (s.factor * pos_freq);
      float ramp = (float(i) - p.ramp_min) / p.ramp_span;
      ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
      const float extrapolation_factor = 1.0f - ramp;
      const float a = interpolation * (1.0f - extrapolation_factor);
      const float b = inv * extrapolation_factor;
      return a + b;
    }
    case RopeScaling::llama3: {
      const float original = float(s.original_max_positions);
      const float low_wavelen = float(double(s.original_max_positions) / s.low_freq_factor);
      const float high_wavelen = float(double(s.original_max_positions) / s.high_freq_factor);
      const float wavelen = (1.0f / inv) * float(2 * pi);  // 2 * math.pi / inv_freq
      const float scaled = wavelen > low_wavelen ? inv / s.factor : inv;
      if (wavelen < high_wavelen || wavelen > low_wavelen) return scaled;
      // (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
      const float smooth = ((1.0f / wavelen) * original - s.low_freq_factor) /
                           float(double(s.high_freq_factor) - double(s.low_freq_factor));
      const float a = (1.0f - smooth) * scaled / s.factor;
      const float b = smooth * scaled;
      return a + b;
    }
    default: return inv;  // none, dynamic (its base is prepared)
  }
}

}  // namespace

Status rope_inv_freq_f32(std::size_t d_rot, float base, const RopeScalingParams& s, float* inv_freq,
                         float* attention_factor) noexcept {
  Prepared p;
  const Status st = prepare(d_rot, base, s, p);
  if (st != Status::ok) return st;
  if (!inv_freq || !attention_factor) return Status::null_pointer;
  for (std::size_t i = 0; i < d_rot / 2; ++i) inv_freq[i] = inv_freq_at(i, d_rot, s, p);
  *attention_factor = p.attention_factor;
  return Status::ok;
}

Status rope_table_scaled_f32(std::size_t positions, std::size_t d_rot, float base, const RopeScalingParams& s,
                             float* cos, float* sin) noexcept {
  Prepared p;
  const Status st = prepare(d_rot, base, s, p);
  if (st != Status::ok) return st;
  if (positions != 0 && (!cos || !sin)) return Status::null_pointer;
  const std::size_t half = d_rot / 2;
  const float factor = p.attention_factor;
  for (std::size_t i = 0; i < half; ++i) {
    const float inv_freq = inv_freq_at(i, d_rot, s, p);
    for (std::size_t q = 0; q < positions; ++q) {
      const float angle = float(q) * inv_freq;  // one float32 product, as HF's freqs
      // emb.cos() * attention_scaling: a product with 1 changes nothing.
      const float c = std::cos(angle), sn = std::sin(angle);
      cos[q * half + i] = c * factor;
      sin[q * half + i] = sn * factor;
    }
  }
  return Status::ok;
}

}  // namespace emha
