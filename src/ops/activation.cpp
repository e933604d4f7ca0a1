#include "ops/activation.h"

#include <string_view>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "ops/op_check.h"
#include "ops/rows.h"

namespace keel::ops {

namespace {

cpu::Unary unary_of(Activation f) {
  switch (f) {
    case Activation::silu:
      return cpu::Unary::silu;
    case Activation::sigmoid:
      return cpu::Unary::sigmoid;
    case Activation::relu2:
      return cpu::Unary::relu2;
    case Activation::gelu_erf:
      return cpu::Unary::gelu_erf;
    case Activation::gelu_tanh:
      return cpu::Unary::gelu_tanh;
    case Activation::softplus:
      return cpu::Unary::softplus;
  }
  return cpu::Unary::silu;
}

void check_f32(std::string_view op, std::string_view name, const Tensor& t) {
  if (!t.defined()) throw_error(ErrorCode::invalid_argument, "{}: {} is missing", op, name);
  if (t.dtype() != DType::f32)
    throw_error(ErrorCode::invalid_argument, "{}: {} must be f32, got {}", op, name, dtype_name(t.dtype()));
  if (t.ndim() < 1)
    throw_error(ErrorCode::invalid_argument, "{}: {} must have at least one dimension", op, name);
  if (t.dim(-1) > 1 && t.stride_bytes(-1) != 4)
    throw_error(ErrorCode::invalid_argument, "{}: {} {} needs a contiguous last dimension", op, name,
                t.shape_string());
}

void check_same(std::string_view op, std::string_view name, const Tensor& t, const Tensor& like) {
  check_f32(op, name, t);
  if (!same_shape(t, like))
    throw_error(ErrorCode::invalid_argument, "{}: {} must be {}, got {}", op, name, like.shape_string(),
                t.shape_string());
}

// fn(a_row, b_row, out_row, n) over pieces of at most kPiece elements of every row, split among the threads.
constexpr int64_t kPiece = 4096;
template <class Fn>
void for_each_piece(CpuBackend& be, const Tensor& a, const Tensor* b, const Tensor& out, Fn fn) {
  const int64_t rows = row_count(out), n = out.dim(-1), pieces = (n + kPiece - 1) / kPiece;
  be.threads()->parallel_for(rows * pieces, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / pieces, k = (i % pieces) * kPiece, len = n - k < kPiece ? n - k : kPiece;
      fn(row_f32(a, r) + k, b ? row_f32(*b, r) + k : nullptr, row_f32(out, r) + k, len);
    }
  });
}

}  // namespace

void activation(Backend& be, const Tensor& x, Tensor& out, Activation f) {
  check_f32("activation", "x", x);
  check_same("activation", "out", out, x);
  CpuBackend& cpu = cpu_backend("activation", be);
  const cpu::Unary u = unary_of(f);
  for_each_piece(cpu, x, nullptr, out, [&](const float* xr, const float*, float* yr, int64_t n) {
    cpu::unary(cpu.isa(), u, xr, yr, n);
  });
}

void activation_mul(Backend& be, const Tensor& gate, const Tensor& up, Tensor& out, Activation f) {
  check_f32("activation_mul", "gate", gate);
  check_same("activation_mul", "up", up, gate);
  check_same("activation_mul", "out", out, gate);
  CpuBackend& cpu = cpu_backend("activation_mul", be);
  const cpu::Unary u = unary_of(f);
  for_each_piece(cpu, gate, &up, out, [&](const float* g, const float* v, float* yr, int64_t n) {
    cpu::unary_mul(cpu.isa(), u, g, v, yr, n);
  });
}

void softmax(Backend& be, const Tensor& x, Tensor& out) {
  check_f32("softmax", "x", x);
  check_same("softmax", "out", out, x);
  CpuBackend& cpu = cpu_backend("softmax", be);
  const int64_t n = x.dim(-1);
  if (n == 0) return;
  cpu.threads()->parallel_for(row_count(x), [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) cpu::softmax_row(cpu.isa(), row_f32(x, r), row_f32(out, r), n);
  });
}

void add(Backend& be, const Tensor& a, const Tensor& b, Tensor& out) {
  check_f32("add", "a", a);
  check_same("add", "b", b, a);
  check_same("add", "out", out, a);
  for_each_piece(cpu_backend("add", be), a, &b, out,
                 [](const float* x, const float* y, float* o, int64_t n) { cpu::add(x, y, o, n); });
}

void mul(Backend& be, const Tensor& a, const Tensor& b, Tensor& out) {
  check_f32("mul", "a", a);
  check_same("mul", "b", b, a);
  check_same("mul", "out", out, a);
  for_each_piece(cpu_backend("mul", be), a, &b, out,
                 [](const float* x, const float* y, float* o, int64_t n) { cpu::mul(x, y, o, n); });
}

}  // namespace keel::ops
