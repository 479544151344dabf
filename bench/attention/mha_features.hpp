// SPDX-License-Identifier: Apache-2.0
#pragma once
// What each feature around attention costs: MultiHeadAttention::forward at
// (S, D, H) = (128, 256, 8) with one Config member changed against the plain layer, in the same
// run as bench_mha.cpp's benchmarks (attention/bench_mha_features.cpp).

#include <cstdio>
#include <map>
#include <string>

#include "support/bench_main.hpp"

namespace emha_bench {

// Sets each feature layer's weights, checks its forward() against forward_reference() (a
// deviation above 1e-3, or a feature whose output equals the plain layer's, fails: returns
// false; one line per feature on `text`), and registers its benchmark:
//   mha_feature/S:128/D:256/H:8/<plain|rope|xpos|alibi|post_layer_norm|pre_rms_norm|sub_layer_norm>
bool register_mha_features(std::FILE* text);

// The features' table: median CPU µs per forward, GFLOP/s (bench_mha's FLOP count, which counts
// no feature's work), and each median over the plain layer's median. Nothing if plain did not run.
void print_mha_feature_summary(std::FILE* out, const std::map<std::string, Measured>& results);

}  // namespace emha_bench
