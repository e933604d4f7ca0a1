#include "ops/op_check.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace keel::ops {

namespace {
std::string shape_text(std::initializer_list<int64_t> shape) {
  std::string s = "[";
  int i = 0;
  for (int64_t d : shape)
    s += fmt::format("{}{}", i++ ? ", " : "", d == kAnyDim ? std::string("*") : std::to_string(d));
  return s + "]";
}
}  // namespace

void check_tensor(std::string_view op, std::string_view name, const Tensor& t,
                  std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape) {
  if (!t.defined()) throw_error(ErrorCode::invalid_argument, "{}: {} is missing", op, name);
  bool dtype_ok = false;
  std::string wanted;
  for (DType d : dtypes) {
    dtype_ok = dtype_ok || t.dtype() == d;
    wanted += fmt::format("{}{}", wanted.empty() ? "" : "/", dtype_name(d));
  }
  if (!dtype_ok)
    throw_error(ErrorCode::invalid_argument, "{}: {} must be {}, got {}", op, name, wanted,
                dtype_name(t.dtype()));
  bool shape_ok = t.ndim() == static_cast<int>(shape.size());
  int i = 0;
  for (int64_t d : shape) shape_ok = shape_ok && (d == kAnyDim || (i < t.ndim() && t.dim(i) == d)), ++i;
  if (!shape_ok)
    throw_error(ErrorCode::invalid_argument, "{}: {} must be {}, got {}", op, name, shape_text(shape),
                t.shape_string());
  if (t.ndim() > 0 && t.dim(-1) > 1 && t.stride_bytes(-1) != dtype_info(t.dtype()).block_bytes)
    throw_error(ErrorCode::invalid_argument, "{}: {} {} needs a contiguous last dimension (stride {} bytes)",
                op, name, t.shape_string(), t.stride_bytes(-1));
}

void check_contiguous(std::string_view op, std::string_view name, const Tensor& t,
                      std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape) {
  check_tensor(op, name, t, dtypes, shape);
  if (!t.is_contiguous())
    throw_error(ErrorCode::invalid_argument, "{}: {} {} must be contiguous", op, name, t.shape_string());
}

void check_weight(std::string_view op, std::string_view name, const Weight& w,
                  std::initializer_list<DType> dense_dtypes, int64_t rows, int64_t cols) {
  if (!w.is_packed()) return check_tensor(op, name, w.data, dense_dtypes, {rows, cols});
  const std::string words = fmt::format("{} (packed words)", name);
  check_tensor(op, words, w.data, {DType::u32}, {rows, cols == kAnyDim ? kAnyDim : cols * w.bits / 32});
  if (cols != kAnyDim && cols * w.bits % 32 != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} has {} columns, not whole {}-bit words", op, name, cols,
                w.bits);
  const int64_t groups = w.cols() / w.group_size;
  check_tensor(op, fmt::format("{} scales", name), w.scales, {DType::f32, DType::bf16, DType::f16},
               {w.rows(), groups});
  check_tensor(op, fmt::format("{} biases", name), w.biases, {w.scales.dtype()}, {w.rows(), groups});
}

void require_support(const Backend& be, Op op, DType dtype, std::string_view what) {
  if (!be.supports(op, dtype))
    throw_error(ErrorCode::unsupported, "{}: backend {} has no kernel for {}", what, be.name(),
                dtype_name(dtype));
}

void require_support(const Backend& be, Op op, const Weight& w, std::string_view what) {
  if (!w.is_packed()) return require_support(be, op, w.dtype(), what);
  if (!be.supports(op, DType::u32))
    throw_error(ErrorCode::unsupported,
                "{}: backend {} has no kernel for {}-bit packed weights (group size {})", what, be.name(),
                w.bits, w.group_size);
}

std::span<const int32_t> host_i32(Backend& be, std::string_view op, std::string_view name, const Tensor& t,
                                  std::span<const int32_t> given, std::vector<int32_t>& storage) {
  const int64_t T = t.dim(0);
  if (!given.empty()) {
    if (static_cast<int64_t>(given.size()) != T)
      throw_error(ErrorCode::invalid_argument, "{}: {} host {} for {} {}", op, given.size(), name, T, name);
    return given;
  }
  storage.resize(static_cast<size_t>(T));
  if (T > 0) be.download(t, storage.data(), 4 * T);
  return storage;
}

}  // namespace keel::ops
