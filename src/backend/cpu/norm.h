// CPU kernels for the RMS and L2 norms, one row at a time (callers split rows among threads). Sums of squares
// accumulate in double in a fixed order (so a row's result depends only on its own values); everything else
// is f32 in the reference's order: (x · r) · w with r = 1/sqrt(mean(x²) + eps) rounded to f32.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "core/dtype.h"

namespace keel::cpu {

// NormWeight: backend/kernel_args.h.

// y = x / sqrt(mean(x²) + eps) ⊙ w over each group of `group` elements of a row of n (n % group == 0).
// y may equal x.
void rms_norm_row(const float* x, float* y, int64_t n, int64_t group, const NormWeight& w, float eps);
// Mamba2 order: y = rms_norm(x ⊙ silu(z)) ⊙ w per group. y may equal x or z.
void rms_norm_gate_then_norm_row(CpuIsa isa, const float* x, const float* z, float* y, int64_t n,
                                 int64_t group, const NormWeight& w, float eps);
// Gated DeltaNet order: y = (rms_norm(x) ⊙ w) ⊙ silu(z) per group. y may equal x, not z.
void rms_norm_then_gate_row(CpuIsa isa, const float* x, const float* z, float* y, int64_t n, int64_t group,
                            const NormWeight& w, float eps);
// y = x / sqrt(Σx² + eps) over the row. y may equal x.
void l2_norm_row(const float* x, float* y, int64_t n, float eps);

}  // namespace keel::cpu
