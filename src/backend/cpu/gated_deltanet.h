// CPU kernel of ops::gated_deltanet (ops/gated_deltanet.h states the math, layouts and the two forms): the
// recurrence one token at a time (one pass over S per token), or the chunked WY form when C > 0 and T > 1.
// Work splits over value heads; each head's whole sequence runs on one worker in a fixed order (results
// independent of thread count; the recurrence's also of how a sequence is split into calls).
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// Strides in floats; innermost dimensions contiguous.
struct GatedDeltaNetArgs {
  int64_t T = 0, Hk = 0, Hv = 0, Dk = 0, Dv = 0;
  int64_t C = 0;  // chunk of the WY form; 0: the recurrence at every T
  bool qk_l2norm = true;
  float eps = 1e-6f;
  const float* q = nullptr;  // [T, Hk, Dk]
  int64_t q_st = 0, q_sh = 0;
  const float* k = nullptr;  // [T, Hk, Dk]
  int64_t k_st = 0, k_sh = 0;
  const float* v = nullptr;  // [T, Hv, Dv]
  int64_t v_st = 0, v_sh = 0;
  const float* a = nullptr;  // [T, Hv]
  int64_t a_st = 0, a_sh = 0;
  const float* b = nullptr;  // [T, Hv]
  int64_t b_st = 0, b_sh = 0;
  const float* neg_A = nullptr;    // [Hv]: −exp(A_log)
  const float* dt_bias = nullptr;  // [Hv]
  float* state = nullptr;          // [Hv, Dk, Dv] contiguous
  float* out = nullptr;            // [T, Hv, Dv]
  int64_t o_st = 0, o_sh = 0;
};

// Bytes gated_deltanet below takes from the pool (the op adds its 2·Hv parameter floats).
int64_t gated_deltanet_kernel_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int64_t C,
                                              int n_threads);

void gated_deltanet(CpuBackend& be, const GatedDeltaNetArgs& a);

}  // namespace keel::cpu
