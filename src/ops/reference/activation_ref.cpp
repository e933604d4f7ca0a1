#include "ops/reference/activation_ref.h"

#include <cmath>
#include <cstddef>

namespace keel::ref {

double activation(ops::Activation f, double x) {
  switch (f) {
    case ops::Activation::silu:
      return x / (1.0 + std::exp(-x));
    case ops::Activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case ops::Activation::relu2:
      return x > 0 ? x * x : 0.0;
    case ops::Activation::gelu_erf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ops::Activation::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case ops::Activation::softplus:
      return x > 20.0 ? x : std::log1p(std::exp(x));
  }
  return 0;
}

std::vector<double> activation(ops::Activation f, const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = activation(f, x[i]);
  return y;
}

std::vector<double> softmax(const std::vector<double>& x, int64_t cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, x[r * cols + j]);
    for (int64_t j = 0; j < cols; ++j) s += std::exp(x[r * cols + j] - m);
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = std::exp(x[r * cols + j] - m) / s;
  }
  return y;
}

}  // namespace keel::ref
