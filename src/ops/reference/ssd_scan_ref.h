// Plain float64 reference of ops::ssd_scan: the token-by-token recurrence, no chunks, no tiling.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

struct SsdShape {
  int64_t T, H, P, G, N;
};

// Row-major contiguous arrays: x [T,H,P], dt_raw [T,H], B and C [T,G,N], A_log/dt_bias/D [H];
// state [H,P,N] is read and updated; returns y [T,H,P]. dt = clamp(softplus(dt_raw + dt_bias), dt_min,
// dt_max).
std::vector<double> ssd_scan(const SsdShape& s, const std::vector<double>& x,
                             const std::vector<double>& dt_raw, const std::vector<double>& B,
                             const std::vector<double>& C, const std::vector<double>& A_log,
                             const std::vector<double>& dt_bias, const std::vector<double>& D, double dt_min,
                             double dt_max, std::vector<double>& state);

}  // namespace keel::ref
