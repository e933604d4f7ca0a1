#include "ops/reference/rope_ref.h"

#include <cmath>
#include <cstddef>

namespace keel::ref {

double hf_rope_angle(double theta, int64_t rotary_dim, int64_t i, int64_t position) {
  volatile float exponent = static_cast<float>(2 * i) / static_cast<float>(rotary_dim);
  volatile float power = std::pow(static_cast<float>(theta), static_cast<float>(exponent));
  volatile float inv_freq = 1.0f / power;
  volatile float angle = inv_freq * static_cast<float>(position);
  return angle;
}

double exact_rope_angle(double theta, int64_t rotary_dim, int64_t i, int64_t position) {
  return static_cast<double>(position) * std::pow(theta, -2.0 * static_cast<double>(i) / rotary_dim);
}

std::vector<double> rope(const std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H,
                         int64_t D, int64_t rotary_dim, double theta, bool hf_angles) {
  std::vector<double> y = x;
  const int64_t half = rotary_dim / 2;
  for (size_t t = 0; t < positions.size(); ++t)
    for (int64_t h = 0; h < H; ++h) {
      const double* q = &x[(t * H + h) * D];
      double* out = &y[(t * H + h) * D];
      for (int64_t j = 0; j < rotary_dim; ++j) {
        const int64_t i = j % half;  // emb = cat(freqs, freqs)
        const double a = hf_angles ? hf_rope_angle(theta, rotary_dim, i, positions[t])
                                   : exact_rope_angle(theta, rotary_dim, i, positions[t]);
        const double rotated = j < half ? -q[j + half] : q[j - half];  // rotate_half
        out[j] = q[j] * std::cos(a) + rotated * std::sin(a);
      }
    }
  return y;
}

}  // namespace keel::ref
