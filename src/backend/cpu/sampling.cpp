// CPU argmax over rows of logits (the rest of sampling is host code in ops/sampling_host.h).
#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

namespace {
// Index of the largest of n logits (the first one on ties).
int64_t argmax_row(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

}  // namespace

}  // namespace keel::cpu

namespace keel {

void CpuBackend::argmax(const ArgmaxArgs& a) {
  threads_.parallel_for(a.rows, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r)
      a.out[r] = static_cast<int32_t>(
          cpu::argmax_row(reinterpret_cast<const float*>(a.logits + r * a.row_bytes), a.V));
  });
}

}  // namespace keel
