// CPU pieces of ops::moe (ops/moe.h states the routing math): the router's top-k per token, and the gather /
// scatter that move token rows to and from an expert's contiguous batch. The expert matmuls are ops::matmul.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// kMoeMaxTopK, kMoeMaxGroups: backend/kernel_args.h. The router bias arrives widened to f32 here.
struct MoeRouteArgs {
  int64_t T = 0, E = 0, top_k = 1;
  bool sigmoid_grouped = false;
  int64_t n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  float scaling = 1.0f;
  const float* logits = nullptr;  // [T, E], row stride logits_st floats
  int64_t logits_st = 0;
  const float* bias = nullptr;  // [E] or null (sigmoid_grouped's e_score_correction_bias)
  int32_t* indices = nullptr;   // [T, top_k] contiguous
  float* weights = nullptr;     // [T, top_k] contiguous
};

// Per token, no scratch beyond the stack: softmax top-k as exp(l − l_max) ratios over the chosen k (the full
// softmax denominator cancels in the renormalization); sigmoid scores recomputed from the logits when needed.
// Slots come out in descending selection score; equal scores go to the lower expert index.
void moe_route(CpuBackend& be, const MoeRouteArgs& a);

// dst row r = src row rows[r] for r < n (rows of `width` floats; strides in floats).
void moe_gather(CpuBackend& be, const float* src, int64_t src_st, const int32_t* rows, int64_t n,
                int64_t width, float* dst, int64_t dst_st);
// dst row rows[r] += scale[r] · src row r for r < n; the rows[] are distinct.
void moe_scatter_add(CpuBackend& be, const float* src, int64_t src_st, const int32_t* rows,
                     const float* scale, int64_t n, int64_t width, float* dst, int64_t dst_st);

// row t of dst (width floats) *= scale[t] for t < n.
void moe_scale_rows(CpuBackend& be, const float* scale, int64_t n, int64_t width, float* dst, int64_t dst_st);

}  // namespace keel::cpu
