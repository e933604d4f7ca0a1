// Plain double references for ops/matmul.h. Tensors are row-major vectors of double (the
// exact values the kernel reads, bf16/f16 already widened).
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

// y[T, out] = x[T, in] · w[out, in]ᵀ (+ bias[out] when bias is non-empty).
std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& bias, int64_t T, int64_t in, int64_t out);

}  // namespace keel::ref
