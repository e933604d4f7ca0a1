#include "backend/cpu/rope.h"

#include <cmath>

namespace keel::cpu {

void rope_inv_freq(double theta, int64_t rotary_dim, float* inv_freq) {
  // torch: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=float32) / dim)), every step in float32.
  const float base = static_cast<float>(theta), dim = static_cast<float>(rotary_dim);
  for (int64_t i = 0; i < rotary_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / dim;
    inv_freq[i] = 1.0f / std::pow(base, exponent);
  }
}

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
