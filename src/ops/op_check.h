// Shape and dtype checks shared by the ops: each failure throws Error(invalid_argument) naming the op, the
// tensor, and expected vs actual, e.g. "matmul: w must be [2048, 1024], got [2048, 1000]".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel {
class CpuBackend;
}

namespace keel::ops {

constexpr int64_t kAnyDim = -1;

// t has exactly this shape (kAnyDim matches any size) and one of `dtypes`; its innermost dimension is
// contiguous (outer strides are free, so row views of a larger tensor pass).
void check_tensor(std::string_view op, std::string_view name, const Tensor& t,
                  std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape);
// As check_tensor, and the whole tensor is contiguous.
void check_contiguous(std::string_view op, std::string_view name, const Tensor& t,
                      std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape);
// Throws Error(unsupported) for a backend the op has no kernel for.
[[noreturn]] void unsupported_backend(std::string_view op, const Backend& be);
// `be` as the CPU backend, or Error(unsupported) naming the op.
CpuBackend& cpu_backend(std::string_view op, Backend& be);

}  // namespace keel::ops
