#include "ops/conv1d.h"

#include "backend/cpu/conv1d.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
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

int64_t causal_conv1d_workspace_bytes(int64_t C, DType bias_dtype) {
  return bias_dtype == DType::f32 ? 0 : C * 4;
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
  if (K < 1 || K > cpu::kConv1dMaxKernel)
    throw_error(ErrorCode::unsupported, "causal_conv1d: kernel width {} (1..{} supported)", K,
                cpu::kConv1dMaxKernel);
  const int64_t w_row = weight.stride_bytes(0) / dtype_info(weight.dtype()).block_bytes;
  if (weight.stride_bytes(0) % dtype_info(weight.dtype()).block_bytes != 0)
    throw_error(ErrorCode::invalid_argument, "causal_conv1d: weight rows are not whole elements apart");
  const bool has_bias = bias.defined() && bias.data() != nullptr;
  if (has_bias) check_contiguous("causal_conv1d", "bias", bias, {DType::f32, DType::bf16, DType::f16}, {C});
  check_contiguous("causal_conv1d", "state", state, {DType::f32}, {K - 1, C});
  check_tensor("causal_conv1d", "out", out, {DType::f32}, {T, C});
  if (overlaps(out, x) || (K > 1 && overlaps(out, state)))
    throw_error(ErrorCode::invalid_argument, "causal_conv1d: out must not overlap x or state");
  CpuBackend& cpu = cpu_backend("causal_conv1d", be);

  Tensor bias_f32;  // [C] f32 when the stored bias is bf16/f16
  const float* bias_ptr = nullptr;
  if (has_bias && bias.dtype() == DType::f32) {
    bias_ptr = bias.ptr<const float>();
  } else if (has_bias) {
    bias_f32 = Tensor::empty(be.pool(), DType::f32, {C}, "conv1d bias (f32)");
    for (int64_t c = 0; c < C; ++c) bias_f32.ptr<float>()[c] = param_at(bias, c);
    bias_ptr = bias_f32.ptr<const float>();
  }
  cpu::Conv1dArgs a;
  a.x = x.ptr<const float>();
  a.x_row = stride_floats("causal_conv1d", "x", x, 0);
  a.w = weight.data();
  a.w_row = w_row;
  a.w_dtype = weight.dtype();
  a.bias = bias_ptr;
  a.state = state.ptr<float>();
  a.out = out.ptr<float>();
  a.out_row = stride_floats("causal_conv1d", "out", out, 0);
  a.T = T, a.C = C, a.K = K, a.silu = p.silu;
  // Channel blocks of 64 split among the threads.
  const int64_t blocks = (C + 63) / 64;
  cpu.threads()->parallel_for(blocks, [&](int64_t begin, int64_t end, int) {
    cpu::causal_conv1d_channels(cpu.isa(), a, begin * 64, end * 64 < C ? end * 64 : C);
  });
}

}  // namespace keel::ops
