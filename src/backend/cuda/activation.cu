// CUDA element-wise activations (gated: f(x) ⊙ up), row softmax and add/mul, over F32Rows (rows of n
// contiguous floats at any byte strides). The CPU's formulas (backend/cpu/activation.cpp) with CUDA's
// libm-accurate expf/erff/tanhf/log1pf (nvcc's defaults, no fast math); products and sums rounded as the CPU
// rounds them. out may be x, up, a or b: every element is read and written by one thread.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

__device__ inline float apply(Activation f, float x) {
  switch (f) {
    case Activation::silu:
      return cuda::silu(x);
    case Activation::sigmoid:
      return cuda::sigmoid(x);
    case Activation::relu2: {
      const float r = x > 0.0f ? x : 0.0f;
      return r * r;
    }
    case Activation::gelu_erf:
      // 1 + erf(y) as erfc(−y): the same value without the cancellation of 1 + erf(y) for y ≪ 0, where
      // CUDA's erff (2 ulp) would leave ~1e-3 relative error in the tail.
      return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case Activation::gelu_tanh: {
      const float inner = __fadd_rn(x, __fmul_rn(0.044715f * x * x, x));  // x + 0.044715·x³, unfused
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * inner));
    }
    case Activation::softplus:
      return x > 20.0f ? x : log1pf(expf(x));
  }
  return x;
}

// Blocks stride over rows (y) and over a row's n elements (x); row addresses once per row.
__global__ void activation_kernel(ActivationArgs a) {
  cuda::pdl_begin();
  for (int64_t r = blockIdx.y; r < a.out.rows; r += gridDim.y) {
    const float* x = a.x.row(r);
    const float* up = a.gated ? a.up.row(r) : nullptr;
    float* y = a.out.row(r);
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.out.n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const float v = apply(a.f, x[i]);
      y[i] = up ? v * up[i] : v;
    }
  }
}

__global__ void binary_kernel(BinaryArgs a) {
  cuda::pdl_begin();
  for (int64_t r = blockIdx.y; r < a.out.rows; r += gridDim.y) {
    const float* p = a.a.row(r);
    const float* q = a.b.row(r);
    float* y = a.out.row(r);
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.out.n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
      y[i] = a.op == BinaryOp::add ? p[i] + q[i] : p[i] * q[i];
  }
}

// One block per row: m = max (the CPU's scan order is irrelevant: max is exact), e = exp(x − m) into out,
// Σe in double (wider than the CPU's f32 lanes), then out /= f32(Σe).
__global__ void softmax_kernel(SoftmaxArgs a) {
  cuda::pdl_begin();
  const int64_t n = a.x.n;
  for (int64_t r = blockIdx.x; r < a.x.rows; r += gridDim.x) {
    const float* x = a.x.row(r);
    float* y = a.out.row(r);
    float m = x[0];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = x[i] > m ? x[i] : m;
    m = cuda::block_max(m);
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float e = expf(x[i] - m);
      y[i] = e;
      s += e;
    }
    const float sum = static_cast<float>(cuda::block_sum(s));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] /= sum;
  }
}

// Rows (y) and kThreads-blocks of a row (x) for an element-wise kernel.
dim3 element_grid(const F32Rows& out) {
  return dim3(cuda::grid_blocks(out.n, cuda::kThreads), cuda::grid_blocks(out.rows));
}

}  // namespace

void CudaBackend::activation(const ActivationArgs& a) {
  enter();
  if (a.out.rows == 0 || a.out.n == 0) return;
  cuda::launch(activation_kernel, element_grid(a.out), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "activation launch");
}

void CudaBackend::softmax(const SoftmaxArgs& a) {
  enter();
  if (a.x.rows == 0 || a.x.n == 0) return;
  cuda::launch(softmax_kernel, cuda::grid_blocks(a.x.rows), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "softmax launch");
}

void CudaBackend::binary(const BinaryArgs& a) {
  enter();
  if (a.out.rows == 0 || a.out.n == 0) return;
  cuda::launch(binary_kernel, element_grid(a.out), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "binary launch");
}

}  // namespace keel
