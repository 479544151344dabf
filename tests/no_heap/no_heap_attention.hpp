#pragma once

struct NoHeapAttentionResult {
  bool ok;
};

// Constructs a MultiHeadAttention, sets its weights and runs forward with every mask kind and
// attention weights requested. Called with the heap gate armed.
NoHeapAttentionResult run_attention_without_heap() noexcept;
