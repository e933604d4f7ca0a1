// CPU kernels for elementwise activations and the row softmax, over contiguous f32 spans.
// Every element goes through the same vector code whatever its position (a span's tail is padded into a full
// vector), so an element's bits do not depend on the span it came in or the thread split. They may differ
// between ISAs (GCC contracts a·b + c into FMA under the AVX2/AVX-512 targets). softmax_row sums in the ISA's
// width: its order depends only on the row length.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

enum class Unary {
  silu,       // x·σ(x), as x / (1 + e^{−x})
  sigmoid,    // 1 / (1 + e^{−x})
  relu2,      // max(x, 0)²
  gelu_erf,   // x/2 · (1 + erf(x/√2))
  gelu_tanh,  // x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))
  softplus,   // log(1 + e^x), x above 20 passes through (torch's threshold)
};

// y[i] = f(x[i]) for i < n; y may equal x.
void unary(CpuIsa isa, Unary f, const float* x, float* y, int64_t n);
// y[i] = f(g[i]) · u[i]; y may equal g or u.
void unary_mul(CpuIsa isa, Unary f, const float* g, const float* u, float* y, int64_t n);
// y = e^{x − max x} / Σ e^{x − max x} over n > 0 elements; y may equal x.
void softmax_row(CpuIsa isa, const float* x, float* y, int64_t n);
// y[i] = a[i] + b[i] and y[i] = a[i] · b[i]; y may equal a or b.
void add(const float* a, const float* b, float* y, int64_t n);
void mul(const float* a, const float* b, float* y, int64_t n);

}  // namespace keel::cpu
