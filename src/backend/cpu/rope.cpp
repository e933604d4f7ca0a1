#include "backend/cpu/rope.h"

#include <cmath>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

void rope_cos_sin_row(int32_t position, const float* inv_freq, int64_t rotary_dim, float* table) {
  const int64_t half = rotary_dim / 2;
  const float p = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = inv_freq[i] * p;  // torch: inv_freq @ position_ids in float32
    table[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    table[half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

void rope_head(const float* x, float* y, int64_t head_dim, int64_t rotary_dim, const float* cs) {
  const int64_t half = rotary_dim / 2;
  const float* cosv = cs;
  const float* sinv = cs + half;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half], c = cosv[i], s = sinv[i];
    const float lo = a * c - b * s;  // q[i]·cos + (−q[i + R/2])·sin
    const float hi = b * c + a * s;  // q[i + R/2]·cos + q[i]·sin
    y[i] = lo;
    y[i + half] = hi;
  }
  if (y != x)
    for (int64_t i = rotary_dim; i < head_dim; ++i) y[i] = x[i];
}

}  // namespace keel::cpu

namespace keel {

void CpuBackend::rope_cos_sin(const RopeCosSinArgs& a) {
  threads_.parallel_for(a.T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t)
      cpu::rope_cos_sin_row(a.positions[t], a.inv_freq, a.R,
                            reinterpret_cast<float*>(a.table + t * a.table_row_bytes));
  });
}

// One (token, head) per work item.
void CpuBackend::rope(const RopeArgs& a) {
  const int64_t H = a.H;
  threads_.parallel_for(a.T * H, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / H, h = i % H;
      cpu::rope_head(reinterpret_cast<const float*>(a.x + t * a.x_st + h * a.x_sh),
                     reinterpret_cast<float*>(a.out + t * a.o_st + h * a.o_sh), a.D, a.R,
                     reinterpret_cast<const float*>(a.table + t * a.table_row_bytes));
    }
  });
}

}  // namespace keel
