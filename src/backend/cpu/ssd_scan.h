// CPU kernel of ops::ssd_scan (ops/ssd_scan.h states the math and the layouts). Work splits over heads; the
// chunk's C·Bᵀ is computed once per group and shared by its heads. Each head's arithmetic is done by one
// worker in a fixed order, so results do not depend on the thread count.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Bytes of ssd_scan's workspace below, besides its 3·H parameter floats (CpuBackend adds those).
int64_t ssd_scan_kernel_workspace_bytes(int64_t T, int64_t H, int64_t P, int64_t G, int64_t N, int64_t Q,
                                        int n_threads);

// keel::SsdScanArgs (backend/kernel_args.h; strides in floats, the op checks byte strides are whole floats;
// innermost dimensions contiguous). Takes 3·H floats from the pool for A = −exp(A_log), dt_bias and D widened
// to f32 once, then the workspace above.
void ssd_scan(CpuBackend& be, const SsdScanArgs& a);

}  // namespace keel::cpu
