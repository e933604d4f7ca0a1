// CPU pieces of ops::moe (ops/moe.h states the routing math): the router's top-k per token, the combine of
// each token's expert outputs, the shared expert's gate. The grouping and the grouped expert matmuls are
// backend/moe_host.h's (the CPU's own matmul per expert).
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

// kernel_args.h MoeCombineArgs, tokens split among the threads.
void moe_combine(CpuBackend& be, const MoeCombineArgs& a);
// kernel_args.h ScaleRowsArgs.
void moe_scale_rows(CpuBackend& be, const ScaleRowsArgs& a);

}  // namespace keel::cpu
