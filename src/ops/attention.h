// Causal softmax attention of a chunk of T queries over a KV cache: prefill chunks and decode (T = 1) alike.
// Tiled online softmax (flash style) in fp32; the causal mask comes from indices and is never materialized.
//
// The T queries sit at absolute positions offset … offset + T − 1; the caller has already written their keys
// and values into the cache, so it holds kv_len = offset + T rows. Query i sees keys [0, offset + i]:
//   out[i, h] = Σ_j softmax_j(scale · q[i, h] · K[j, h / (n_q / n_kv)]) · V[j, h / (n_q / n_kv)]
// (GQA: consecutive query heads share a KV head, as transformers' repeat_kv does).
//
// Batch invariant (docs/OPS.md): a query row's result depends only on its position and the cache, never on T,
// the offset at which its chunk starts or the thread split. Every row walks key tiles of kAttentionKeyTile
// keys at fixed absolute boundaries 0, 64, 128, … up to its own position, in order, with the same arithmetic.
#pragma once
#include <cstdint>
#include <optional>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

constexpr int64_t kAttentionKeyTile = 64;    // keys per tile (fixed: part of every row's reduction order)
constexpr int64_t kAttentionQueryTile = 16;  // query positions per work item (free: rows are independent)

struct AttentionParams {
  int64_t offset = 0;          // absolute position of query 0 = rows already in the cache before this chunk
  std::optional<float> scale;  // softmax scale; default 1/√head_dim
};

// q       [T, n_q, D] f32          (rows contiguous; outer strides free)
// k_cache [capacity, n_kv, D] f32 or f16  rows [0, offset + T) are read (a backend may take f32 only)
// v_cache [capacity, n_kv, Dv]            k_cache's dtype
// out     [T, n_q, Dv] f32         written
// D and Dv up to 512; n_q a multiple of n_kv.
void attention(Backend& be, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, Tensor& out,
               const AttentionParams& p);

// The step's keys or values into the cache: cache_rows (f32 or f16, contiguous) = rows (f32, the same element
// count), converted to f16 (round to nearest even) where the cache is f16 — a copy where it is f32.
void store_kv_rows(Backend& be, const Tensor& rows, Tensor& cache_rows);

// Bytes attention takes from be's pool (the backend states it). The CPU's: per worker four score rows of
// kAttentionKeyTile floats and the running max and sum of hp·kAttentionQueryTile rows, for min(threads, work
// items) workers, where hp query heads of a KV group share a work item (all n_q/n_kv of them unless the
// workers need more items) and work items = (n_q / hp)·⌈T / kAttentionQueryTile⌉: 4·(256 + 32·hp) bytes per
// worker, at most 4·(256 + 32·n_q/n_kv). CUDA's: steps of at most kAttentionQueryTile rows split the keys
// into up to 32 runs (backend/cuda/attention.cu), 32·T·n_q·(Dv + 2) floats of partials. Independent of
// kv_len.
int64_t attention_workspace_bytes(const Backend& be, int64_t T, int64_t n_q, int64_t n_kv, int64_t D,
                                  int64_t Dv, DType kv_cache = DType::f32);

}  // namespace keel::ops
