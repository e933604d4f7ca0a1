// Shape and dtype checks shared by the ops: each failure throws Error(invalid_argument) naming the op, the
// tensor, and expected vs actual, e.g. "matmul: w must be [2048, 1024], got [2048, 1000]".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "core/weight.h"

namespace keel::ops {

constexpr int64_t kAnyDim = -1;

// t has exactly this shape (kAnyDim matches any size) and one of `dtypes`; its innermost dimension is
// contiguous (outer strides are free, so row views of a larger tensor pass).
void check_tensor(std::string_view op, std::string_view name, const Tensor& t,
                  std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape);
// As check_tensor, and the whole tensor is contiguous.
void check_contiguous(std::string_view op, std::string_view name, const Tensor& t,
                      std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape);
// A Weight of logical shape [rows, cols] (kAnyDim matches any): dense in one of `dense_dtypes`, or packed
// (u32 words [rows, cols·bits/32], f32/bf16/f16 scales and biases [rows, cols/group_size]); rows contiguous.
void check_weight(std::string_view op, std::string_view name, const Weight& w,
                  std::initializer_list<DType> dense_dtypes, int64_t rows, int64_t cols);

// Asks the backend before work is placed on it: Error(unsupported) naming the op, the backend and the dtype
// (of the weight, or the input for ops without weights) when be.supports(op, dtype) says no.
void require_support(const Backend& be, Op op, DType dtype, std::string_view what);

// The i32 [T] tensor `t`'s values on the host, for a check: `given` (the caller's host copy; its size must be
// T) or, when empty, a download of `t` into `storage` (on a device that waits for the stream).
std::span<const int32_t> host_i32(Backend& be, std::string_view op, std::string_view name, const Tensor& t,
                                  std::span<const int32_t> given, std::vector<int32_t>& storage);
inline void require_support(const Backend& be, Op op, DType dtype) {
  require_support(be, op, dtype, op_name(op));
}
// The same for a weight: names "4-bit (group 64)" packed weights, whose words are u32.
void require_support(const Backend& be, Op op, const Weight& w, std::string_view what);

}  // namespace keel::ops
