// CPU argmax over rows of logits, and sample_rows: the host sampler of backend/sampling_host.h, row by row
// on the calling thread (the rows' workspace is one row's worth, reused).
#include "backend/cpu/cpu_backend.h"
#include "backend/sampling_host.h"

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

int64_t CpuBackend::sample_rows_workspace(const SampleRowsArgs& a) const {
  return sampling_host::sample_rows_workspace(a);
}

void CpuBackend::sample_rows(const SampleRowsArgs& a) {
  if (a.n == 0) return;
  Tensor ws =
      Tensor::empty(pool_, DType::u8, {sampling_host::sample_rows_workspace(a)}, "sampling workspace");
  sampling_host::sample_rows(a, ws.data());
}

}  // namespace keel
