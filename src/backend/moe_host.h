// The MoE grouping and the grouped expert matmul for backends whose tensors live in host memory (CPU,
// reference): a stable counting sort of the routing on the host, and one matmul call per expert over its
// gathered rows (the backend's own matmul kernel, so an expert's products are bitwise those of a plain
// matmul over the same rows). backend/cuda/moe.cu is the device twin of both (one kernel each).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::host_moe {

// MoeGroupArgs on host memory (kernel_args.h states the result).
inline void group(const MoeGroupArgs& a) {
  const int64_t R = a.T * a.k;
  std::fill(a.offsets, a.offsets + a.E + 1, 0);
  for (int64_t p = 0; p < R; ++p)
    if (a.indices[p] >= 0 && a.indices[p] < a.E) ++a.offsets[a.indices[p] + 1];
  for (int64_t e = 0; e < a.E; ++e) a.offsets[e + 1] += a.offsets[e];
  // offsets[e] runs as expert e's cursor, then is moved back: pairs in ascending p = ascending token.
  for (int64_t p = 0; p < R; ++p) {
    const int32_t e = a.indices[p];
    if (e < 0 || e >= a.E) {
      a.position[p] = -1;
      continue;
    }
    const int32_t i = a.offsets[e]++;
    a.token[i] = static_cast<int32_t>(p / a.k);
    a.position[p] = i;
  }
  for (int64_t e = a.E; e > 0; --e) a.offsets[e] = a.offsets[e - 1];
  a.offsets[0] = 0;
}

// Expert e's matmul over grouped rows [begin, begin + n): x rows already in place (no gather) or gathered
// into `xg` ([tokens, in] f32 scratch) first.
inline MatmulArgs expert_args(const GroupedMatmulArgs& g, int64_t e, int64_t begin, int64_t n, float* xg) {
  MatmulArgs m = g.m;
  m.w = g.w[e];
  if (m.w_bits > 0) m.w_scales = g.w_scales[e], m.w_biases = g.w_biases[e];
  m.bias = nullptr;
  if (g.x_rows) {
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(xg + r * m.in, g.m.x + g.x_rows[begin + r] * g.m.x_row_bytes,
                  static_cast<size_t>(m.in) * sizeof(float));
    m.x = reinterpret_cast<const char*>(xg), m.x_row_bytes = 4 * m.in;
  } else {
    m.x = g.m.x + begin * g.m.x_row_bytes;
  }
  m.y = g.m.y + begin * g.m.y_row_bytes;
  m.T = n;
  return m;
}

// The gather scratch grouped_matmul below needs: [tokens, in] f32 when x_rows are given, else none.
inline int64_t gather_bytes(const GroupedMatmulArgs& g) {
  return g.x_rows ? 4 * g.tokens * g.m.in : 0;
}

// The most matmul workspace an expert takes: an expert holding every token (the most rows one can have).
inline int64_t expert_matmul_workspace(const Backend& be, const GroupedMatmulArgs& g) {
  MatmulArgs m = g.m;
  m.T = g.tokens;
  return g.tokens > 0 ? be.matmul_workspace(m) : 0;
}

// GroupedMatmulArgs on host memory: be.matmul once per expert that has rows, in expert order; `gather` holds
// gather_bytes(g) (the caller's scratch: pool memory on the CPU).
inline void grouped_matmul(Backend& be, const GroupedMatmulArgs& g, float* gather) {
  if (g.m.T == 0 || g.m.out == 0) return;
  for (int64_t e = 0; e < g.E; ++e) {
    const int64_t begin = g.offsets[e], n = g.offsets[e + 1] - begin;
    if (n > 0) be.matmul(expert_args(g, e, begin, n, gather));
  }
}

}  // namespace keel::host_moe
