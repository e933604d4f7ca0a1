#include "backend/cpu/norm.h"

#include <cmath>

#include "backend/cpu/activation.h"

namespace keel::cpu {

namespace {

float weight_at(const NormWeight& w, int64_t i) {
  i %= w.size;
  float v;
  switch (w.dtype) {
    case DType::bf16: v = bf16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
    case DType::f16: v = f16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
    default: v = static_cast<const float*>(w.data)[i]; break;
  }
  return w.one_plus ? 1.0f + v : v;
}

// 1 / sqrt(Σ x² / divisor + eps), the sum in double, the rest in f32 as torch computes rsqrt(var + eps).
float inv_rms(const float* x, int64_t n, int64_t divisor, float eps) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  const float var = static_cast<float>(s / static_cast<double>(divisor));
  return 1.0f / std::sqrt(var + eps);
}

}  // namespace

void rms_norm_row(const float* x, float* y, int64_t n, int64_t group, const NormWeight& w, float eps) {
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const float r = inv_rms(x + g0, group, group, eps);
    for (int64_t i = g0; i < g0 + group; ++i) y[i] = (x[i] * r) * weight_at(w, i);
  }
}

void rms_norm_gate_then_norm_row(CpuIsa isa, const float* x, const float* z, float* y, int64_t n, int64_t group,
                                 const NormWeight& w, float eps) {
  unary_mul(isa, Unary::silu, z, x, y, n);  // y = silu(z) · x
  rms_norm_row(y, y, n, group, w, eps);
}

void rms_norm_then_gate_row(CpuIsa isa, const float* x, const float* z, float* y, int64_t n, int64_t group,
                            const NormWeight& w, float eps) {
  rms_norm_row(x, y, n, group, w, eps);
  unary_mul(isa, Unary::silu, z, y, y, n);  // y = silu(z) · y
}

void l2_norm_row(const float* x, float* y, int64_t n, float eps) {
  const float r = inv_rms(x, n, 1, eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r;
}

}  // namespace keel::cpu
