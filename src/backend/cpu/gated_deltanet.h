// CPU kernel of ops::gated_deltanet (ops/gated_deltanet.h states the math, layouts and the two forms): the
// recurrence one token at a time (one pass over S per token), or the chunked WY form when C > 0 and T > 1.
// Work splits over value heads; each head's whole sequence runs on one worker in a fixed order (results
// independent of thread count; the recurrence's also of how a sequence is split into calls).
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Bytes of gated_deltanet's workspace below, besides its 2·Hv parameter floats (CpuBackend adds those).
int64_t gated_deltanet_kernel_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int64_t C,
                                              int n_threads);

// keel::GatedDeltaNetArgs (backend/kernel_args.h; strides in floats, innermost dimensions contiguous). Takes
// 2·Hv floats from the pool for −exp(A_log) and dt_bias widened to f32 once, then the workspace above.
void gated_deltanet(CpuBackend& be, const GatedDeltaNetArgs& a);

}  // namespace keel::cpu
