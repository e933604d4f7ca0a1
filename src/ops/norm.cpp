#include "ops/norm.h"

#include <string_view>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/rows.h"

namespace keel::ops {

namespace {

void check_rows(std::string_view op, std::string_view name, const Tensor& t, const Tensor* like) {
  if (!t.defined()) throw_error(ErrorCode::invalid_argument, "{}: {} is missing", op, name);
  if (t.dtype() != DType::f32)
    throw_error(ErrorCode::invalid_argument, "{}: {} must be f32, got {}", op, name, dtype_name(t.dtype()));
  if (t.ndim() < 1 || (t.dim(-1) > 1 && t.stride_bytes(-1) != 4))
    throw_error(ErrorCode::invalid_argument, "{}: {} {} needs a contiguous last dimension", op, name,
                t.shape_string());
  if (like && !same_shape(t, *like))
    throw_error(ErrorCode::invalid_argument, "{}: {} must be {}, got {}", op, name, like->shape_string(),
                t.shape_string());
}

NormWeight norm_weight(std::string_view op, const Tensor& w, int64_t size_a, int64_t size_b, bool one_plus) {
  check_contiguous(op, "weight", w, {DType::f32, DType::bf16, DType::f16}, {kAnyDim});
  if (w.dim(0) != size_a && w.dim(0) != size_b)
    throw_error(ErrorCode::invalid_argument, "{}: weight must be [{}]{}, got {}", op, size_a,
                size_b != size_a ? fmt::format(" or [{}]", size_b) : "", w.shape_string());
  return NormWeight{w.data(), w.dtype(), w.dim(0), one_plus};
}

}  // namespace

void rms_norm(Backend& be, const Tensor& x, const Tensor& weight, Tensor& out, const RmsNormParams& p) {
  check_rows("rms_norm", "x", x, nullptr);
  check_rows("rms_norm", "out", out, &x);
  const int64_t d = x.dim(-1);
  const NormWeight w = norm_weight("rms_norm", weight, d, d, p.scale == NormScale::one_plus_weight);
  require_support(be, Op::rms_norm, weight.dtype(), "rms_norm");
  if (d == 0) return;
  be.rms_norm(RmsNormArgs{rows_of(x), rows_of(out), w, p.eps});
}

void gated_rms_norm(Backend& be, const Tensor& x, const Tensor& z, const Tensor& weight, Tensor& out,
                    const GatedRmsNormParams& p) {
  check_rows("gated_rms_norm", "x", x, nullptr);
  check_rows("gated_rms_norm", "z", z, &x);
  check_rows("gated_rms_norm", "out", out, &x);
  const int64_t c = x.dim(-1), g = p.group_size;
  if (g <= 0 || c % g != 0)
    throw_error(ErrorCode::invalid_argument, "gated_rms_norm: group size {} does not divide {} channels", g,
                c);
  if (p.order == GateOrder::norm_then_gate && out.data() == z.data() && c > 0)
    throw_error(ErrorCode::invalid_argument, "gated_rms_norm: norm_then_gate cannot write over z");
  const NormWeight w = norm_weight("gated_rms_norm", weight, c, g, false);
  require_support(be, Op::rms_norm, weight.dtype(), "gated_rms_norm");
  be.gated_rms_norm(GatedRmsNormArgs{rows_of(x), rows_of(z), rows_of(out), w, g, p.order, p.eps});
}

void l2_norm(Backend& be, const Tensor& x, Tensor& out, float eps) {
  check_rows("l2_norm", "x", x, nullptr);
  check_rows("l2_norm", "out", out, &x);
  require_support(be, Op::l2_norm, DType::f32, "l2_norm");
  be.l2_norm(L2NormArgs{rows_of(x), rows_of(out), eps});
}

}  // namespace keel::ops
