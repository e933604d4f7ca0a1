#include "backend/cpu/norm.h"

#include <cmath>

#include "backend/cpu/activation.h"

namespace keel::cpu {

namespace {

// y[i] = (x[i] · r) · w[i] (or · (1 + w[i])) for i < n, w in its stored dtype.
template <class Widen>
void scale_by_weight(const float* x, float* y, int64_t n, float r, const void* w, bool one_plus,
                     Widen widen) {
  if (one_plus) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * r) * (1.0f + widen(w, i));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * r) * widen(w, i);
  }
}

void scale_group(const float* x, float* y, int64_t n, float r, const NormWeight& w, int64_t w_offset) {
  switch (w.dtype) {
    case DType::bf16: {
      const auto* p = static_cast<const uint16_t*>(w.data) + w_offset;
      scale_by_weight(x, y, n, r, p, w.one_plus, [](const void* q, int64_t i) {
        return bf16_to_f32(static_cast<const uint16_t*>(q)[i]);
      });
      break;
    }
    case DType::f16: {
      const auto* p = static_cast<const uint16_t*>(w.data) + w_offset;
      scale_by_weight(x, y, n, r, p, w.one_plus, [](const void* q, int64_t i) {
        return f16_to_f32(static_cast<const uint16_t*>(q)[i]);
      });
      break;
    }
    default: {
      const auto* p = static_cast<const float*>(w.data) + w_offset;
      scale_by_weight(x, y, n, r, p, w.one_plus,
                      [](const void* q, int64_t i) { return static_cast<const float*>(q)[i]; });
    }
  }
}

// 1 / sqrt(Σ x² / divisor + eps): the sum in double over 8 interleaved partial sums combined in a fixed
// order, the rest in f32 as torch computes rsqrt(var + eps).
float inv_rms(const float* x, int64_t n, int64_t divisor, float eps) {
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += static_cast<double>(x[i + j]) * x[i + j];
  for (; i < n; ++i) part[i % 8] += static_cast<double>(x[i]) * x[i];
  const double s = ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
  const float var = static_cast<float>(s / static_cast<double>(divisor));
  return 1.0f / std::sqrt(var + eps);
}

}  // namespace

void rms_norm_row(const float* x, float* y, int64_t n, int64_t group, const NormWeight& w, float eps) {
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const float r = inv_rms(x + g0, group, group, eps);
    scale_group(x + g0, y + g0, group, r, w, w.size == n ? g0 : 0);
  }
}

void rms_norm_gate_then_norm_row(CpuIsa isa, const float* x, const float* z, float* y, int64_t n,
                                 int64_t group, const NormWeight& w, float eps) {
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

namespace keel {

// Rows split among the threads; each row's arithmetic is the row kernel's alone.
void CpuBackend::rms_norm(const RmsNormArgs& a) {
  if (a.x.n == 0) return;
  threads_.parallel_for(a.x.rows, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r)
      cpu::rms_norm_row(a.x.row(r), a.out.row(r), a.x.n, a.x.n, a.w, a.eps);
  });
}

void CpuBackend::gated_rms_norm(const GatedRmsNormArgs& a) {
  const int64_t c = a.x.n, g = a.group;
  threads_.parallel_for(a.x.rows, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) {
      if (a.order == GateOrder::gate_then_norm)
        cpu::rms_norm_gate_then_norm_row(isa_, a.x.row(r), a.z.row(r), a.out.row(r), c, g, a.w, a.eps);
      else
        cpu::rms_norm_then_gate_row(isa_, a.x.row(r), a.z.row(r), a.out.row(r), c, g, a.w, a.eps);
    }
  });
}

void CpuBackend::l2_norm(const L2NormArgs& a) {
  threads_.parallel_for(a.x.rows, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) cpu::l2_norm_row(a.x.row(r), a.out.row(r), a.x.n, a.eps);
  });
}

}  // namespace keel
