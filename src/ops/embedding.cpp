#include "ops/embedding.h"

#include <vector>

#include "core/error.h"
#include "ops/op_check.h"

namespace keel::ops {

void embedding(Backend& be, const Weight& table, const Tensor& ids, Tensor& out,
               std::span<const int32_t> host_ids) {
  check_weight("embedding", "table", table, {DType::f32, DType::bf16, DType::f16}, kAnyDim, kAnyDim);
  const int64_t vocab = table.rows(), d = table.cols();
  check_contiguous("embedding", "ids", ids, {DType::i32}, {kAnyDim});
  const int64_t T = ids.dim(0);
  check_tensor("embedding", "out", out, {DType::f32}, {T, d});
  require_support(be, Op::embedding, table, "embedding");
  std::vector<int32_t> downloaded;  // checked on the host (the ids may live on a device)
  const std::span<const int32_t> id = host_i32(be, "embedding", "ids", ids, host_ids, downloaded);
  for (int64_t t = 0; t < T; ++t)
    if (id[t] < 0 || id[t] >= vocab)
      throw_error(ErrorCode::invalid_argument,
                  "embedding: token id {} at position {} is outside the vocabulary of {} rows", id[t], t,
                  vocab);
  EmbeddingArgs a;
  a.table = static_cast<const char*>(table.data.data());
  a.row_bytes = table.data.stride_bytes(0);
  a.dtype = table.dtype();
  if (table.is_packed()) {
    a.scales = static_cast<const char*>(table.scales.data());
    a.biases = static_cast<const char*>(table.biases.data());
    a.scale_row_bytes = table.scales.stride_bytes(0);
    a.scale_dtype = table.scales.dtype();
    a.bits = table.bits, a.group_size = table.group_size;
  }
  a.ids = ids.ptr<const int32_t>();
  a.out = static_cast<char*>(out.data());
  a.out_row_bytes = out.stride_bytes(0);
  a.T = T, a.d = d;
  be.embedding(a);
}

}  // namespace keel::ops
