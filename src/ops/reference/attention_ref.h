// Plain float64 reference of ops::attention: every score of a row, one softmax, no tiles.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

// q [T, n_q, D], k [kv_len, n_kv, D], v [kv_len, n_kv, Dv] row-major (kv_len ≥ offset + T); returns
// out [T, n_q, Dv] with query i at position offset + i attending keys [0, offset + i].
std::vector<double> attention(int64_t T, int64_t n_q, int64_t n_kv, int64_t D, int64_t Dv, int64_t offset,
                              double scale, const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v);

}  // namespace keel::ref
