// The insertion top-k the MoE routers of every backend share (backend/cpu/moe.cpp, backend/cuda/moe.cu), so
// their picks and tie order cannot drift apart: descending score, equal scores rank the lower index first,
// NaN never ranks above anything. Callable from device code (KEEL_HOST_DEVICE).
#pragma once
#include <cstdint>

#include "backend/kernel_args.h"

namespace keel::topk {

struct Pick {
  float score;
  int32_t index;
};

KEEL_HOST_DEVICE inline bool ranks_above(float score, int32_t index, const Pick& p) {
  return score > p.score || (score == p.score && index < p.index);
}

// Keeps list[0, n) the best ≤ k picks seen so far, best first.
KEEL_HOST_DEVICE inline void offer(Pick* list, int64_t& n, int64_t k, float score, int32_t index) {
  if (n == k && !ranks_above(score, index, list[n - 1])) return;
  int64_t pos = n < k ? n++ : k - 1;
  while (pos > 0 && ranks_above(score, index, list[pos - 1])) {
    list[pos] = list[pos - 1];
    --pos;
  }
  list[pos] = {score, index};
}

}  // namespace keel::topk
