// Plain float64 reference of ops::gated_deltanet: l2norm, gates and the token-by-token delta-rule recurrence.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

struct GatedDeltaNetShape {
  int64_t T, Hk, Hv, Dk, Dv;
};

// Row-major contiguous arrays: q, k [T,Hk,Dk], v [T,Hv,Dv], a, b [T,Hv], A_log, dt_bias [Hv];
// state [Hv,Dk,Dv] is read and updated; returns out [T,Hv,Dv]. Value head h reads key head h / (Hv/Hk).
std::vector<double> gated_deltanet(const GatedDeltaNetShape& s, const std::vector<double>& q,
                                   const std::vector<double>& k, const std::vector<double>& v,
                                   const std::vector<double>& a, const std::vector<double>& b,
                                   const std::vector<double>& A_log, const std::vector<double>& dt_bias,
                                   bool qk_l2norm, double eps, std::vector<double>& state);

}  // namespace keel::ref
