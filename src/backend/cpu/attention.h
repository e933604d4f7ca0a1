// CPU kernel of ops::attention (ops/attention.h states the math, the layouts and the batch-invariance rule).
// Work items are (the query heads of one KV group, tile of query positions), assigned to workers round-robin
// so causal rows of different lengths spread evenly; each row's arithmetic is fixed by its position alone.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Query heads sharing a KV head that one work item takes: all n_q/n_kv of them (each K/V tile read once for
// the group), split into fewer only when that leaves some of the n_threads workers without an item.
int64_t attention_heads_per_item(int64_t T, int64_t n_q, int64_t n_kv, int64_t query_tile, int n_threads);

// kv_tile_floats: 0 for an f32 cache; for an f16 one key_tile·(D + Dv), each worker's tile widened to f32.
int64_t attention_kernel_workspace_bytes(int64_t T, int64_t n_q, int64_t n_kv, int64_t key_tile,
                                         int64_t query_tile, int n_threads, int64_t kv_tile_floats = 0);

// keel::AttentionArgs (backend/kernel_args.h; strides in floats, innermost dimensions contiguous). The work
// items take attention_heads_per_item(…, the pool's size) query heads each.
void attention(CpuBackend& be, const AttentionArgs& a);

}  // namespace keel::cpu
