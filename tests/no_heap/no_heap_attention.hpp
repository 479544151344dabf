// SPDX-License-Identifier: Apache-2.0
#pragma once

struct NoHeapAttentionResult {
  bool ok;
};

// Constructs a MultiHeadAttention, sets its weights and runs forward with every mask kind and
// attention weights requested. Called with the heap gate armed.
NoHeapAttentionResult run_attention_without_heap() noexcept;

// A layer of max_threads = 2 large enough that every stage splits (S = 128, d_model 256),
// forward with masks, without and with per-head attention weights. The caller has started the
// port's workers (emha::port::start_workers allocates their stacks) before arming the gate.
NoHeapAttentionResult run_threaded_attention_without_heap() noexcept;

// The layers around attention: seed-module configs with xPos and sub-LN, labml's
// mask, partial RoPE, ALiBi, pre-LN RMSNorm and post-LN, each constructed and run fused and
// with attention weights.
NoHeapAttentionResult run_seed_layers_without_heap() noexcept;

// Incremental decoding through a KvCache (GQA with RoPE, MQA with ALiBi): prefill, truncate,
// decode steps with and without attention weights, reset.
NoHeapAttentionResult run_cache_without_heap() noexcept;

// int8 weights (pre-packed and in place) and an int8 KvCache (GQA): the weights quantized
// (quantize_rows_s8), set, a prefill, decode steps with and without attention weights, a forward
// without the cache.
NoHeapAttentionResult run_int8_without_heap() noexcept;

// The full-integer layer (Arithmetic::s8): constructed, its weights set, forward and
// forward_reference with a causal mask, padded keys and int8 probabilities out.
NoHeapAttentionResult run_s8_without_heap() noexcept;
// The 16x8 layer (Arithmetic::s16x8), the same calls.
NoHeapAttentionResult run_s16x8_without_heap() noexcept;
