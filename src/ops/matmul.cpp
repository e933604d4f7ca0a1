#include "ops/matmul.h"

#include "ops/op_check.h"

namespace keel::ops {

namespace {

void run(Backend& be, const Tensor& x, const Weight& w, const Tensor* bias, Tensor& y) {
  check_weight("matmul", "w", w, {DType::f32, DType::bf16, DType::f16}, kAnyDim, kAnyDim);
  const int64_t out = w.rows(), in = w.cols();
  check_tensor("matmul", "x", x, {DType::f32}, {kAnyDim, in});
  const int64_t T = x.dim(0);
  check_tensor("matmul", "y", y, {DType::f32}, {T, out});
  if (bias) check_contiguous("matmul", "bias", *bias, {DType::f32}, {out});
  require_support(be, Op::matmul, w, "matmul");
  MatmulArgs a;
  a.x = static_cast<const char*>(x.data());
  a.x_row_bytes = x.stride_bytes(0);
  a.w = static_cast<const char*>(w.data.data());
  a.w_row_bytes = w.data.stride_bytes(0);
  a.w_dtype = w.dtype();
  if (w.is_packed()) {
    a.w_scales = static_cast<const char*>(w.scales.data());
    a.w_biases = static_cast<const char*>(w.biases.data());
    a.w_scale_row_bytes = w.scales.stride_bytes(0);
    a.w_scale_dtype = w.scales.dtype();
    a.w_bits = w.bits, a.w_group_size = w.group_size;
  }
  a.bias = bias ? bias->ptr<const float>() : nullptr;
  a.y = static_cast<char*>(y.data());
  a.y_row_bytes = y.stride_bytes(0);
  a.T = T, a.in = in, a.out = out;
  be.matmul(a);
}

}  // namespace

void matmul(Backend& be, const Tensor& x, const Weight& w, Tensor& y) {
  run(be, x, w, nullptr, y);
}

void matmul(Backend& be, const Tensor& x, const Weight& w, const Tensor& bias, Tensor& y) {
  run(be, x, w, &bias, y);
}

int64_t matmul_workspace_bytes(const Backend& be, int64_t T, int64_t in, int64_t out, const WeightFormat& w) {
  MatmulArgs a;
  a.T = T, a.in = in, a.out = out;
  a.w_dtype = w.dtype, a.w_bits = w.bits, a.w_group_size = w.group_size;
  return be.matmul_workspace(a);
}

}  // namespace keel::ops
