#include "ops/matmul.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "ops/op_check.h"

namespace keel::ops {

namespace {

void run(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  check_tensor("matmul", "w", w, {DType::f32, DType::bf16, DType::f16}, {kAnyDim, kAnyDim});
  const int64_t out = w.dim(0), in = w.dim(1);
  check_tensor("matmul", "x", x, {DType::f32}, {kAnyDim, in});
  const int64_t T = x.dim(0);
  check_tensor("matmul", "y", y, {DType::f32}, {T, out});
  if (bias) check_contiguous("matmul", "bias", *bias, {DType::f32}, {out});
  cpu::MatmulArgs a;
  a.x = static_cast<const char*>(x.data());
  a.x_row_bytes = x.stride_bytes(0);
  a.w = static_cast<const char*>(w.data());
  a.w_row_bytes = w.stride_bytes(0);
  a.w_dtype = w.dtype();
  a.bias = bias ? bias->ptr<const float>() : nullptr;
  a.y = static_cast<char*>(y.data());
  a.y_row_bytes = y.stride_bytes(0);
  a.T = T, a.in = in, a.out = out;
  cpu::matmul(cpu_backend("matmul", be), a);
}

}  // namespace

void matmul(Backend& be, const Tensor& x, const Tensor& w, Tensor& y) {
  run(be, x, w, nullptr, y);
}

void matmul(Backend& be, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  run(be, x, w, &bias, y);
}

int64_t matmul_workspace_bytes(int64_t T, int64_t in, int64_t out, DType w_dtype, int n_threads) {
  return cpu::matmul_workspace_bytes(T, in, out, w_dtype, n_threads);
}

}  // namespace keel::ops
