#include "ops/reference/matmul_ref.h"

#include <cstddef>

namespace keel::ref {

std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& bias, int64_t T, int64_t in, int64_t out) {
  std::vector<double> y(static_cast<size_t>(T * out));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = bias.empty() ? 0.0 : bias[o];
      for (int64_t k = 0; k < in; ++k) s += x[t * in + k] * w[o * in + k];
      y[t * out + o] = s;
    }
  return y;
}

}  // namespace keel::ref
