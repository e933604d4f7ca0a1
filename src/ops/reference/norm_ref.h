// Plain double references for ops/norm.h, written as transformers writes each module (row-major vectors).
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

// Each row of d: x / sqrt(mean(x²) + eps) · (one_plus ? 1 + w : w).
std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, int64_t d,
                             double eps, bool one_plus);
// Rows of C channels; weight entry for channel c is w[c % w.size()] (w has C entries, or one group's).
// MambaRMSNormGated: v = x·silu(z); per group of `group`: v / sqrt(mean(v²) + eps) · w.
std::vector<double> rms_norm_gate_then_norm(const std::vector<double>& x, const std::vector<double>& z,
                                            const std::vector<double>& w, int64_t C, int64_t group,
                                            double eps);
// Qwen3_5RMSNormGated per head: (x / sqrt(mean_head(x²) + eps) · w) · silu(z).
std::vector<double> rms_norm_then_gate(const std::vector<double>& x, const std::vector<double>& z,
                                       const std::vector<double>& w, int64_t C, int64_t group, double eps);
// x / sqrt(Σx² + eps) per row of d.
std::vector<double> l2_norm(const std::vector<double>& x, int64_t d, double eps);

}  // namespace keel::ref
