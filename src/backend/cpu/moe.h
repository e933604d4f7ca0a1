// CPU pieces of ops::moe (ops/moe.h states the routing math): the router's top-k per token, and the gather /
// scatter that move token rows to and from an expert's contiguous batch. The expert matmuls are ops::matmul.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// keel::MoeRouteArgs (backend/kernel_args.h; kMoeMaxTopK and kMoeMaxGroups there too). Takes E floats from
// the pool for the router bias widened to f32 when there is one. Per token, no scratch beyond the stack:
// softmax top-k as exp(l − l_max) ratios over the chosen k (the full softmax denominator cancels in the
// renormalization); sigmoid scores recomputed from the logits when needed. Slots come out in descending
// selection score; equal scores go to the lower expert index.
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
