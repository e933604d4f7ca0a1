// CUDA causal depthwise conv1d with carried state (ops/conv1d.h states the math):
//   out[t, c] = bias[c] + Σ_{j<K} w[c, j] · xx[t + j, c],  xx = concat(state, x) ([K−1 + T, C]),
// then state = the last K−1 rows of xx. Two kernels on the stream: the outputs (reading the old state), then
// the state update (one thread per channel, rows in ascending order: row r takes xx row T + r > r, not yet
// overwritten). out is distinct from x and state (the op refuses overlap). The weights and the bias are read
// in their stored dtype, so no workspace.
//
// Numerics as the CPU (backend/cpu/conv1d.cpp): acc = 0, acc += w·x for j ascending with the product rounded
// before the sum, + bias, then silu(v) = v / (1 + e^−v) when asked.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

constexpr int64_t kConvTokens = 16;  // tokens per thread of the output kernel

// Channels stride over x (one per thread), runs of kConvTokens tokens over y. Strides in floats.
__global__ void conv1d_out_kernel(Conv1dArgs a) {
  cuda::pdl_begin();
  const int64_t K = a.K, S = K - 1, C = a.C;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < C;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float wk[kConv1dMaxKernel];  // w[c, 0..K) widened
    for (int64_t j = 0; j < K; ++j) wk[j] = cuda::load_widened(a.w, a.w_dtype, c * a.w_row + j);
    const bool has_bias = a.bias.data != nullptr;
    const float bias = has_bias ? cuda::param_at(a.bias, c) : 0.0f;
    for (int64_t t0 = blockIdx.y * kConvTokens; t0 < a.T;
         t0 += static_cast<int64_t>(gridDim.y) * kConvTokens) {
      const int64_t t1 = a.T - t0 < kConvTokens ? a.T : t0 + kConvTokens;
      for (int64_t t = t0; t < t1; ++t) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t r = t + j;  // row of xx
          const float v = r < S ? a.state[r * C + c] : a.x[(r - S) * a.x_row + c];
          acc = __fadd_rn(acc, __fmul_rn(wk[j], v));
        }
        const float o = has_bias ? acc + bias : acc;
        a.out[t * a.out_row + c] = a.silu ? cuda::silu(o) : o;
      }
    }
  }
}

// state[r, c] ← xx[T + r, c] for r < K − 1, ascending (T > 0).
__global__ void conv1d_state_kernel(Conv1dArgs a) {
  cuda::pdl_begin();
  const int64_t S = a.K - 1, C = a.C;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < C;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    for (int64_t r = 0; r < S; ++r) {
      const int64_t q = a.T + r;
      a.state[r * C + c] = q < S ? a.state[q * C + c] : a.x[(q - S) * a.x_row + c];
    }
}

}  // namespace

int64_t CudaBackend::causal_conv1d_workspace(const Conv1dArgs&) const {
  return 0;  // weights and bias are read as stored
}

void CudaBackend::causal_conv1d(const Conv1dArgs& a) {
  enter();
  if (a.T == 0 || a.C == 0) return;
  const dim3 grid(cuda::grid_blocks(a.C, cuda::kThreads), cuda::grid_blocks(a.T, kConvTokens));
  cuda::launch(conv1d_out_kernel, grid, cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "causal_conv1d launch");
  if (a.K > 1) {
    cuda::launch(conv1d_state_kernel, cuda::grid_blocks(a.C, cuda::kThreads), cuda::kThreads, 0, stream(), a);
    cuda::check(cudaGetLastError(), "causal_conv1d (state) launch");
  }
}

}  // namespace keel
