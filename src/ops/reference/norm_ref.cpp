#include "ops/reference/norm_ref.h"

#include <cmath>
#include <cstddef>

namespace keel::ref {

namespace {
double silu(double v) {
  return v / (1.0 + std::exp(-v));
}

double inv_rms(const double* v, int64_t n, double eps) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i] * v[i];
  return 1.0 / std::sqrt(s / static_cast<double>(n) + eps);
}
}  // namespace

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, int64_t d,
                             double eps, bool one_plus) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    const double inv = inv_rms(&x[r * d], d, eps);
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * inv * (one_plus ? 1.0 + w[i] : w[i]);
  }
  return y;
}

std::vector<double> rms_norm_gate_then_norm(const std::vector<double>& x, const std::vector<double>& z,
                                            const std::vector<double>& w, int64_t C, int64_t group,
                                            double eps) {
  std::vector<double> v(x.size()), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) v[i] = x[i] * silu(z[i]);
  for (size_t g0 = 0; g0 < x.size(); g0 += group) {
    const double inv = inv_rms(&v[g0], group, eps);
    for (int64_t i = 0; i < group; ++i) y[g0 + i] = v[g0 + i] * inv * w[((g0 + i) % C) % w.size()];
  }
  return y;
}

std::vector<double> rms_norm_then_gate(const std::vector<double>& x, const std::vector<double>& z,
                                       const std::vector<double>& w, int64_t C, int64_t group, double eps) {
  std::vector<double> y(x.size());
  for (size_t g0 = 0; g0 < x.size(); g0 += group) {
    const double inv = inv_rms(&x[g0], group, eps);
    for (int64_t i = 0; i < group; ++i)
      y[g0 + i] = x[g0 + i] * inv * w[((g0 + i) % C) % w.size()] * silu(z[g0 + i]);
  }
  return y;
}

std::vector<double> l2_norm(const std::vector<double>& x, int64_t d, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double s = 0;
    for (int64_t i = 0; i < d; ++i) s += x[r * d + i] * x[r * d + i];
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] / std::sqrt(s + eps);
  }
  return y;
}

}  // namespace keel::ref
