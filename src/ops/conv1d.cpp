#include "ops/conv1d.h"

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto span = [](const Tensor& t) {
    const char* lo = static_cast<const char*>(t.data());
    const char* hi = static_cast<const char*>(t.at(t.dim(0) - 1)) + t.dim(-1) * 4;
    return std::pair{lo, hi};
  };
  auto [a0, a1] = span(a);
  auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

}  // namespace

int64_t causal_conv1d_workspace_bytes(const Backend& be, int64_t T, int64_t C, int64_t K, DType bias_dtype) {
  Conv1dArgs a;
  a.T = T, a.C = C, a.K = K;
  a.bias.dtype = bias_dtype;
  return be.causal_conv1d_workspace(a);
}

void causal_conv1d(Backend& be, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& state,
                   Tensor& out, const Conv1dParams& p) {
  check_tensor("causal_conv1d", "x", x, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), C = x.dim(1);
  if (weight.ndim() == 3) {
    check_tensor("causal_conv1d", "weight", weight, {DType::f32, DType::bf16, DType::f16}, {C, 1, kAnyDim});
  } else {
    check_tensor("causal_conv1d", "weight", weight, {DType::f32, DType::bf16, DType::f16}, {C, kAnyDim});
  }
  const int64_t K = weight.dim(-1);
  if (K < 1 || K > kConv1dMaxKernel)
    throw_error(ErrorCode::unsupported, "causal_conv1d: kernel width {} (1..{} supported)", K,
                kConv1dMaxKernel);
  const int64_t w_row = weight.stride_bytes(0) / dtype_info(weight.dtype()).block_bytes;
  if (weight.stride_bytes(0) % dtype_info(weight.dtype()).block_bytes != 0)
    throw_error(ErrorCode::invalid_argument, "causal_conv1d: weight rows are not whole elements apart");
  const bool has_bias = bias.defined() && bias.data() != nullptr;
  if (has_bias) check_contiguous("causal_conv1d", "bias", bias, {DType::f32, DType::bf16, DType::f16}, {C});
  check_contiguous("causal_conv1d", "state", state, {DType::f32}, {K - 1, C});
  check_tensor("causal_conv1d", "out", out, {DType::f32}, {T, C});
  if (overlaps(out, x) || (K > 1 && overlaps(out, state)))
    throw_error(ErrorCode::invalid_argument, "causal_conv1d: out must not overlap x or state");
  require_support(be, Op::conv1d, weight.dtype(), "causal_conv1d");
  if (has_bias) require_support(be, Op::conv1d, bias.dtype(), "causal_conv1d (bias)");
  Conv1dArgs a;
  a.x = x.ptr<const float>();
  a.x_row = stride_floats("causal_conv1d", "x", x, 0);
  a.w = weight.data();
  a.w_row = w_row;
  a.w_dtype = weight.dtype();
  if (has_bias) a.bias = ParamVec{bias.data(), bias.dtype()};
  a.state = state.ptr<float>();
  a.out = out.ptr<float>();
  a.out_row = stride_floats("causal_conv1d", "out", out, 0);
  a.T = T, a.C = C, a.K = K, a.silu = p.silu;
  be.causal_conv1d(a);
}

}  // namespace keel::ops
