#include "ops/embedding.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/embedding.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "ops/op_check.h"

namespace keel::ops {

void embedding(Backend& be, const Tensor& table, const Tensor& ids, Tensor& out) {
  check_tensor("embedding", "table", table, {DType::f32, DType::bf16, DType::f16}, {kAnyDim, kAnyDim});
  const int64_t vocab = table.dim(0), d = table.dim(1);
  check_contiguous("embedding", "ids", ids, {DType::i32}, {kAnyDim});
  const int64_t T = ids.dim(0);
  check_tensor("embedding", "out", out, {DType::f32}, {T, d});
  CpuBackend& cpu = cpu_backend("embedding", be);
  const int32_t* id = ids.ptr<const int32_t>();
  for (int64_t t = 0; t < T; ++t)
    if (id[t] < 0 || id[t] >= vocab)
      throw_error(ErrorCode::invalid_argument,
                  "embedding: token id {} at position {} is outside the vocabulary of {} rows", id[t], t,
                  vocab);
  cpu.threads()->parallel_for(T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t)
      cpu::widen_row(table.at(id[t]), table.dtype(), static_cast<float*>(out.at(t)), d);
  });
}

}  // namespace keel::ops
