#include "backend/cpu/conv1d.h"

#include "backend/cpu/activation.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace keel::cpu {

namespace {
constexpr int64_t kBlock = 64;  // channels per block: weights for the block sit on the stack as [K][kBlock]
}

void causal_conv1d_channels(CpuIsa isa, const Conv1dArgs& a, const float* bias, int64_t c_begin,
                            int64_t c_end) {
  const int64_t K = a.K, S = K - 1;
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kBlock) {
    const int64_t n = c_end - c0 < kBlock ? c_end - c0 : kBlock;
    float wt[kConv1dMaxKernel][kBlock];
    for (int64_t c = 0; c < n; ++c)
      for (int64_t j = 0; j < K; ++j) {
        const int64_t e = (c0 + c) * a.w_row + j;
        switch (a.w_dtype) {
          case DType::bf16:
            wt[j][c] = bf16_to_f32(static_cast<const uint16_t*>(a.w)[e]);
            break;
          case DType::f16:
            wt[j][c] = f16_to_f32(static_cast<const uint16_t*>(a.w)[e]);
            break;
          default:
            wt[j][c] = static_cast<const float*>(a.w)[e];
            break;
        }
      }
    // Row r of concat(state, x), channels [c0, c0 + n).
    auto row = [&](int64_t r) -> const float* {
      return r < S ? a.state + r * a.C + c0 : a.x + (r - S) * a.x_row + c0;
    };
    for (int64_t t = 0; t < a.T; ++t) {
      float acc[kBlock] = {};
      for (int64_t j = 0; j < K; ++j) {
        const float* in = row(t + j);
        for (int64_t c = 0; c < n; ++c) acc[c] += wt[j][c] * in[c];
      }
      float* out = a.out + t * a.out_row + c0;
      for (int64_t c = 0; c < n; ++c) out[c] = bias ? acc[c] + bias[c0 + c] : acc[c];
      if (a.silu) unary(isa, Unary::silu, out, out, n);
    }
    // state ← rows T .. T + K − 2 of concat(state, x). Ascending r reads row T + r > r, not yet overwritten.
    for (int64_t r = 0; r < S && a.T > 0; ++r) {
      const float* src = row(a.T + r);
      float* dst = a.state + r * a.C + c0;
      for (int64_t c = 0; c < n; ++c) dst[c] = src[c];
    }
  }
}

}  // namespace keel::cpu

namespace keel {

int64_t CpuBackend::causal_conv1d_workspace(const Conv1dArgs& a) const {
  return a.bias.dtype == DType::f32 ? 0 : a.C * 4;  // the bias widened to f32
}

void CpuBackend::causal_conv1d(const Conv1dArgs& a) {
  Tensor bias_f32;  // [C] f32 when the stored bias is bf16/f16
  const float* bias = nullptr;
  if (a.bias.data && a.bias.dtype == DType::f32) {
    bias = static_cast<const float*>(a.bias.data);
  } else if (a.bias.data) {
    bias_f32 = Tensor::empty(pool_, DType::f32, {a.C}, "conv1d bias (f32)");
    for (int64_t c = 0; c < a.C; ++c) bias_f32.ptr<float>()[c] = a.bias.at(c);
    bias = bias_f32.ptr<const float>();
  }
  // Channel blocks of 64 split among the threads.
  const int64_t C = a.C, blocks = (C + 63) / 64;
  threads_.parallel_for(blocks, [&](int64_t begin, int64_t end, int) {
    cpu::causal_conv1d_channels(isa_, a, bias, begin * 64, end * 64 < C ? end * 64 : C);
  });
}

}  // namespace keel
