// CPU kernel of ops::ssd_scan (ops/ssd_scan.h states the math and the layouts). Work splits over heads; the
// chunk's C·Bᵀ is computed once per group and shared by its heads. Each head's arithmetic is done by one
// worker in a fixed order, so results do not depend on the thread count.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Strides are in floats (the op checks byte strides are whole floats); innermost dimensions are contiguous.
struct SsdScanArgs {
  int64_t T = 0, H = 0, P = 0, G = 0, N = 0, Q = 0;
  const float* x = nullptr;  // [T, H, P]
  int64_t x_st = 0, x_sh = 0;
  const float* dt = nullptr;  // [T, H] raw dt
  int64_t dt_st = 0, dt_sh = 0;
  const float* B = nullptr;  // [T, G, N]
  int64_t B_st = 0, B_sg = 0;
  const float* C = nullptr;  // [T, G, N]
  int64_t C_st = 0, C_sg = 0;
  const float* A = nullptr;        // [H], A = −exp(A_log)
  const float* dt_bias = nullptr;  // [H]
  const float* D = nullptr;        // [H]
  float* state = nullptr;          // [H, P, N] contiguous, updated in place
  float* y = nullptr;              // [T, H, P]
  int64_t y_st = 0, y_sh = 0;
  float dt_min = 0, dt_max = 0;
};

// Bytes ssd_scan below takes from the pool (the op adds its 3·H parameter floats).
int64_t ssd_scan_kernel_workspace_bytes(int64_t T, int64_t H, int64_t P, int64_t G, int64_t N, int64_t Q,
                                        int n_threads);

void ssd_scan(CpuBackend& be, const SsdScanArgs& a);

}  // namespace keel::cpu
