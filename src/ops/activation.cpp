#include "ops/activation.h"

#include <string_view>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/rows.h"

namespace keel::ops {

namespace {

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

}  // namespace

void activation(Backend& be, const Tensor& x, Tensor& out, Activation f) {
  check_f32("activation", "x", x);
  check_same("activation", "out", out, x);
  require_support(be, Op::activation, DType::f32, "activation");
  be.activation(ActivationArgs{rows_of(x), {}, rows_of(out), f, false});
}

void activation_mul(Backend& be, const Tensor& gate, const Tensor& up, Tensor& out, Activation f) {
  check_f32("activation_mul", "gate", gate);
  check_same("activation_mul", "up", up, gate);
  check_same("activation_mul", "out", out, gate);
  require_support(be, Op::activation, DType::f32, "activation_mul");
  be.activation(ActivationArgs{rows_of(gate), rows_of(up), rows_of(out), f, true});
}

void softmax(Backend& be, const Tensor& x, Tensor& out) {
  check_f32("softmax", "x", x);
  check_same("softmax", "out", out, x);
  require_support(be, Op::softmax, DType::f32, "softmax");
  if (x.dim(-1) == 0) return;
  be.softmax(SoftmaxArgs{rows_of(x), rows_of(out)});
}

void add(Backend& be, const Tensor& a, const Tensor& b, Tensor& out) {
  check_f32("add", "a", a);
  check_same("add", "b", b, a);
  check_same("add", "out", out, a);
  require_support(be, Op::activation, DType::f32, "add");
  be.binary(BinaryArgs{rows_of(a), rows_of(b), rows_of(out), BinaryOp::add});
}

void mul(Backend& be, const Tensor& a, const Tensor& b, Tensor& out) {
  check_f32("mul", "a", a);
  check_same("mul", "b", b, a);
  check_same("mul", "out", out, a);
  require_support(be, Op::activation, DType::f32, "mul");
  be.binary(BinaryArgs{rows_of(a), rows_of(b), rows_of(out), BinaryOp::mul});
}

}  // namespace keel::ops
