#include "ops/reference/gated_deltanet_ref.h"

#include <cmath>

namespace keel::ref {

std::vector<double> gated_deltanet(const GatedDeltaNetShape& s, const std::vector<double>& q,
                                   const std::vector<double>& k, const std::vector<double>& v,
                                   const std::vector<double>& a, const std::vector<double>& b,
                                   const std::vector<double>& A_log, const std::vector<double>& dt_bias,
                                   bool qk_l2norm, double eps, std::vector<double>& state) {
  const int64_t T = s.T, Hk = s.Hk, Hv = s.Hv, Dk = s.Dk, Dv = s.Dv;
  std::vector<double> out(static_cast<size_t>(T * Hv * Dv));
  std::vector<double> qn(Dk), kn(Dk), kv(Dv);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t kh = h / (Hv / Hk);
      double qq = 0, kk = 0;
      for (int64_t d = 0; d < Dk; ++d) {
        qq += q[(t * Hk + kh) * Dk + d] * q[(t * Hk + kh) * Dk + d];
        kk += k[(t * Hk + kh) * Dk + d] * k[(t * Hk + kh) * Dk + d];
      }
      const double qf = (qk_l2norm ? 1 / std::sqrt(qq + eps) : 1.0) / std::sqrt(double(Dk));
      const double kf = qk_l2norm ? 1 / std::sqrt(kk + eps) : 1.0;
      for (int64_t d = 0; d < Dk; ++d) {
        qn[d] = q[(t * Hk + kh) * Dk + d] * qf;
        kn[d] = k[(t * Hk + kh) * Dk + d] * kf;
      }
      const double x = a[t * Hv + h] + dt_bias[h];
      const double g = -std::exp(A_log[h]) * (x > 20 ? x : std::log1p(std::exp(x)));
      const double beta = 1 / (1 + std::exp(-b[t * Hv + h]));
      double* S = &state[h * Dk * Dv];
      for (int64_t i = 0; i < Dk * Dv; ++i) S[i] *= std::exp(g);
      for (int64_t j = 0; j < Dv; ++j) {
        kv[j] = 0;
        for (int64_t d = 0; d < Dk; ++d) kv[j] += S[d * Dv + j] * kn[d];
      }
      for (int64_t d = 0; d < Dk; ++d)
        for (int64_t j = 0; j < Dv; ++j) S[d * Dv + j] += kn[d] * beta * (v[(t * Hv + h) * Dv + j] - kv[j]);
      for (int64_t j = 0; j < Dv; ++j) {
        double o = 0;
        for (int64_t d = 0; d < Dk; ++d) o += S[d * Dv + j] * qn[d];
        out[(t * Hv + h) * Dv + j] = o;
      }
    }
  }
  return out;
}

}  // namespace keel::ref
