// Plain double reference for ops/conv1d.h, written as transformers' causal_conv1d_update: concatenate the
// state and the chunk, convolve, keep the last K−1 inputs.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

// x [T, C], w [C, K], bias [C] (empty: none), state [K−1, C] (updated in place). Returns out [T, C].
std::vector<double> causal_conv1d(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& bias, std::vector<double>& state, int64_t T,
                                  int64_t C, int64_t K, bool silu);

}  // namespace keel::ref
