#include "ops/op_check.h"

#include <fmt/format.h>

#include <string>

#include "backend/cpu/cpu_backend.h"
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

void unsupported_backend(std::string_view op, const Backend& be) {
  throw_error(ErrorCode::unsupported, "{}: no kernel for backend {}", op, be.name());
}

CpuBackend& cpu_backend(std::string_view op, Backend& be) {
  if (be.kind() != DeviceKind::cpu) unsupported_backend(op, be);
  return static_cast<CpuBackend&>(be);
}

}  // namespace keel::ops
