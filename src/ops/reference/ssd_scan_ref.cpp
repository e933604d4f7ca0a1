#include "ops/reference/ssd_scan_ref.h"

#include <algorithm>
#include <cmath>

namespace keel::ref {

std::vector<double> ssd_scan(const SsdShape& s, const std::vector<double>& x,
                             const std::vector<double>& dt_raw, const std::vector<double>& B,
                             const std::vector<double>& C, const std::vector<double>& A_log,
                             const std::vector<double>& dt_bias, const std::vector<double>& D, double dt_min,
                             double dt_max, std::vector<double>& state) {
  const int64_t T = s.T, H = s.H, P = s.P, G = s.G, N = s.N;
  std::vector<double> y(static_cast<size_t>(T * H * P));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      double v = dt_raw[t * H + h] + dt_bias[h];
      double dt = v > 20 ? v : std::log1p(std::exp(v));
      dt = std::min(std::max(dt, dt_min), dt_max);
      const double decay = std::exp(dt * -std::exp(A_log[h]));
      for (int64_t p = 0; p < P; ++p) {
        const double xv = x[(t * H + h) * P + p];
        double out = 0;
        for (int64_t n = 0; n < N; ++n) {
          double& st = state[(h * P + p) * N + n];
          st = decay * st + dt * xv * B[(t * G + g) * N + n];
          out += st * C[(t * G + g) * N + n];
        }
        y[(t * H + h) * P + p] = out + D[h] * xv;
      }
    }
  }
  return y;
}

}  // namespace keel::ref
