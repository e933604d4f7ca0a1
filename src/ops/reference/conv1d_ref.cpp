#include "ops/reference/conv1d_ref.h"

#include <cmath>
#include <cstddef>

namespace keel::ref {

std::vector<double> causal_conv1d(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& bias, std::vector<double>& state, int64_t T,
                                  int64_t C, int64_t K, bool silu) {
  std::vector<double> xx(state);  // [K − 1 + T, C]
  xx.insert(xx.end(), x.begin(), x.end());
  std::vector<double> out(static_cast<size_t>(T * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double s = bias.empty() ? 0.0 : bias[c];
      for (int64_t j = 0; j < K; ++j) s += w[c * K + j] * xx[(t + j) * C + c];
      out[t * C + c] = silu ? s / (1.0 + std::exp(-s)) : s;
    }
  state.assign(xx.end() - (K - 1) * C, xx.end());
  return out;
}

}  // namespace keel::ref
