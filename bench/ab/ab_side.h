// SPDX-License-Identifier: Apache-2.0
// The C interface between bench/ab/ab_main.cpp and one side (ab_side.cpp built against one emha
// revision). Plain C types only: the two sides may disagree on every emha header.
#pragma once
#include <stddef.h>

extern "C" {

struct AbGemm {
  size_t m, n, k;
  int trans_b;     // 0: C = A B, B [k x n]; 1: C = A B^T, B [n x k]
  int prepacked;   // 1: B packed once (gemm_f32_pack_b), timed calls run gemm_f32_prepacked
  const float* a;  // [m x k]
  const float* b;
  float* c;        // [m x n]
};

// Pins the kernel variant `isa` (an emha::simd_isa() name) for the process; 0 on success.
int ab_select_isa(const char* isa);

// Bytes of scratch and packed B this side needs for g (its own blocking decides).
void ab_gemm_sizes(const AbGemm* g, size_t* scratch_bytes, size_t* packed_floats);
// Packs B into `packed` when g->prepacked; 0 on success.
int ab_gemm_prepare(const AbGemm* g, float* packed, size_t packed_floats);
// Runs `iters` calls; returns the seconds per call, or a negative value on an error status.
double ab_gemm_run(const AbGemm* g, const float* packed, void* scratch, size_t scratch_bytes, int iters);

// MultiHeadAttention::forward, self-attention, batch 1, config i of ab_mha_configs (S, D, H),
// weights and input from a fixed seed. Returns seconds per call (negative on error); out[0..S*D).
int ab_mha_count(void);
void ab_mha_config(int i, size_t* seq, size_t* d_model, size_t* heads);
double ab_mha_run(int i, int iters, float* out);
}
