#include "ops/reference/attention_ref.h"

#include <algorithm>
#include <cmath>

namespace keel::ref {

std::vector<double> attention(int64_t T, int64_t n_q, int64_t n_kv, int64_t D, int64_t Dv, int64_t offset,
                              double scale, const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v) {
  std::vector<double> out(static_cast<size_t>(T * n_q * Dv), 0.0);
  for (int64_t i = 0; i < T; ++i) {
    const int64_t n_keys = offset + i + 1;
    for (int64_t h = 0; h < n_q; ++h) {
      const int64_t hk = h / (n_q / n_kv);
      std::vector<double> s(static_cast<size_t>(n_keys));
      for (int64_t j = 0; j < n_keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[(i * n_q + h) * D + d] * k[(j * n_kv + hk) * D + d];
        s[j] = dot * scale;
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < n_keys; ++j)
        for (int64_t d = 0; d < Dv; ++d)
          out[(i * n_q + h) * Dv + d] += s[j] / sum * v[(j * n_kv + hk) * Dv + d];
    }
  }
  return out;
}

}  // namespace keel::ref
