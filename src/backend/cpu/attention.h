// CPU kernel of ops::attention (ops/attention.h states the math, the layouts and the batch-invariance rule).
// Work items are (the query heads of one KV group, tile of query positions), assigned to workers round-robin
// so causal rows of different lengths spread evenly; each row's arithmetic is fixed by its position alone.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Strides in floats; innermost dimensions contiguous.
struct AttentionArgs {
  int64_t T = 0, n_q = 0, n_kv = 0, D = 0, Dv = 0, offset = 0;
  int64_t key_tile = 64, query_tile = 16;
  int64_t heads_per_item = 1;  // query heads of one KV group per work item (attention_heads_per_item)
  float scale = 1;
  const float* q = nullptr;  // [T, n_q, D]
  int64_t q_st = 0, q_sh = 0;
  const float* k = nullptr;  // [kv_len, n_kv, D]
  int64_t k_st = 0, k_sh = 0;
  const float* v = nullptr;  // [kv_len, n_kv, Dv]
  int64_t v_st = 0, v_sh = 0;
  float* out = nullptr;  // [T, n_q, Dv]
  int64_t o_st = 0, o_sh = 0;
};

// Query heads sharing a KV head that one work item takes: all n_q/n_kv of them (each K/V tile read once for
// the group), split into fewer only when that leaves some of the n_threads workers without an item.
int64_t attention_heads_per_item(int64_t T, int64_t n_q, int64_t n_kv, int64_t query_tile, int n_threads);

int64_t attention_kernel_workspace_bytes(int64_t T, int64_t n_q, int64_t n_kv, int64_t key_tile,
                                         int64_t query_tile, int n_threads);

void attention(CpuBackend& be, const AttentionArgs& a);

}  // namespace keel::cpu
