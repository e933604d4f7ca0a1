// CUDA argmax over rows of f32 logits: one block per row. Gives exactly the CPU's answer
// (backend/cpu/sampling.cpp: best = 0, then `x[i] > x[best]` in ascending i), which is: 0 when x[0] is NaN,
// else the first index of the largest non-NaN value (a NaN never compares greater, and the scan never stands
// on one after index 0). Each thread keeps the best non-NaN (value, index) of its strided elements; the
// block combines them by larger value, then lower index.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

// index < 0: no candidate (every element seen was NaN).
struct Best {
  float value;
  int64_t index;
};

__device__ inline Best better(Best p, Best q) {
  if (q.index < 0) return p;
  if (p.index < 0) return q;
  if (q.value > p.value || (q.value == p.value && q.index < p.index)) return q;
  return p;
}

__global__ void argmax_kernel(ArgmaxArgs a) {
  __shared__ float part_value[32];
  __shared__ int64_t part_index[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const auto* x = reinterpret_cast<const float*>(a.logits + r * a.row_bytes);
    Best b{0.0f, -1};
    for (int64_t i = threadIdx.x; i < a.V; i += blockDim.x) {
      const float v = x[i];
      if (v == v && (b.index < 0 || v > b.value)) b = {v, i};  // ascending i: ties keep the first
    }
    for (int o = 16; o > 0; o >>= 1) {
      Best q;
      q.value = __shfl_xor_sync(0xffffffffu, b.value, o);
      q.index = __shfl_xor_sync(0xffffffffu, b.index, o);
      b = better(b, q);
    }
    __syncthreads();  // the previous row's partials are read
    if ((threadIdx.x & 31) == 0)
      part_value[threadIdx.x >> 5] = b.value, part_index[threadIdx.x >> 5] = b.index;
    __syncthreads();
    if (threadIdx.x == 0) {
      Best best{part_value[0], part_index[0]};
      for (unsigned w = 1; w < blockDim.x / 32; ++w) best = better(best, Best{part_value[w], part_index[w]});
      // V = 0: no candidate, and x[0] is not read (the CPU answers 0 too).
      a.out[r] = best.index < 0 || x[0] != x[0] ? 0 : static_cast<int32_t>(best.index);
    }
  }
}

}  // namespace

void CudaBackend::argmax(const ArgmaxArgs& a) {
  enter();
  if (a.rows == 0) return;
  argmax_kernel<<<cuda::grid_blocks(a.rows), cuda::kThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "argmax launch");
}

}  // namespace keel
