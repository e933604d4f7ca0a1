// CUDA rotary embeddings: the cos/sin table from positions and inv_freq, and the rotation (rotate_half layout
// on the first R of each head's D elements; the rest pass through). The CPU's math (backend/cpu/rope.cpp):
// angle = f32(inv_freq[i] · f32(position)), cos and sin in double rounded to f32; the rotation's products are
// rounded before their sum, as the CPU does.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

// inv_freq lives in host memory: up to kFreqChunk frequencies travel by value in the kernel's parameters (2
// KiB), one launch per chunk (R/2 ≤ kFreqChunk, i.e. R ≤ 1024, in one launch), so no device copy is needed.
constexpr int64_t kFreqChunk = 512;
struct FreqChunk {
  float f[kFreqChunk];
};

// table[t, i0 + j] = cos(angle), table[t, R/2 + i0 + j] = sin(angle), angle = freq.f[j] · positions[t], for
// j < count. Blocks stride over tokens (y) and frequencies (x).
__global__ void rope_cos_sin_kernel(RopeCosSinArgs a, FreqChunk freq, int64_t i0, int64_t count) {
  cuda::pdl_begin();
  const int64_t half = a.R / 2;
  for (int64_t t = blockIdx.y; t < a.T; t += gridDim.y) {
    const float p = static_cast<float>(a.positions[t]);
    auto* row = reinterpret_cast<float*>(a.table + t * a.table_row_bytes);
    for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < count;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const float angle = freq.f[j] * p;  // torch: inv_freq @ position_ids in float32
      row[i0 + j] = static_cast<float>(cos(static_cast<double>(angle)));
      row[half + i0 + j] = static_cast<float>(sin(static_cast<double>(angle)));
    }
  }
}

// One (token, head) per y step: item = t·H + h. Work item j < R/2 rotates the pair (j, j + R/2); j in
// [R/2, R/2 + D − R) copies element R + j − R/2 when out is not x. In place (out = x) each pair is read and
// written by one thread.
__global__ void rope_kernel(RopeArgs a) {
  cuda::pdl_begin();
  const int64_t half = a.R / 2, work = half + (a.D - a.R);
  for (int64_t item = blockIdx.y; item < a.T * a.H; item += gridDim.y) {
    const int64_t t = item / a.H, h = item % a.H;
    const auto* x = reinterpret_cast<const float*>(a.x + t * a.x_st + h * a.x_sh);
    auto* y = reinterpret_cast<float*>(a.out + t * a.o_st + h * a.o_sh);
    const auto* cs = reinterpret_cast<const float*>(a.table + t * a.table_row_bytes);  // [cos R/2, sin R/2]
    for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < work;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      if (j < half) {
        const float p = x[j], q = x[j + half], c = cs[j], s = cs[half + j];
        const float lo = __fsub_rn(__fmul_rn(p, c), __fmul_rn(q, s));  // q[j]·cos + (−q[j + R/2])·sin
        const float hi = __fadd_rn(__fmul_rn(q, c), __fmul_rn(p, s));  // q[j + R/2]·cos + q[j]·sin
        y[j] = lo;
        y[j + half] = hi;
      } else if (static_cast<const void*>(y) != static_cast<const void*>(x)) {
        const int64_t i = a.R + (j - half);
        y[i] = x[i];
      }
    }
  }
}

constexpr int kRopeThreads = 128;  // a head's R/2 pairs are typically 32..128

}  // namespace

void CudaBackend::rope_cos_sin(const RopeCosSinArgs& a) {
  enter();
  const int64_t half = a.R / 2;
  if (a.T == 0 || half == 0) return;
  for (int64_t i0 = 0; i0 < half; i0 += kFreqChunk) {
    const int64_t count = half - i0 < kFreqChunk ? half - i0 : kFreqChunk;
    FreqChunk freq{};
    for (int64_t j = 0; j < count; ++j) freq.f[j] = a.inv_freq[i0 + j];
    const dim3 grid(cuda::grid_blocks(count, kRopeThreads), cuda::grid_blocks(a.T));
    cuda::launch(rope_cos_sin_kernel, grid, kRopeThreads, 0, stream(), a, freq, i0, count);
    cuda::check(cudaGetLastError(), "rope_cos_sin launch");
  }
}

void CudaBackend::rope(const RopeArgs& a) {
  enter();
  const int64_t work = a.R / 2 + (a.D - a.R);
  if (a.T == 0 || a.H == 0 || work <= 0) return;
  const dim3 grid(cuda::grid_blocks(work, kRopeThreads), cuda::grid_blocks(a.T * a.H));
  cuda::launch(rope_kernel, grid, kRopeThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "rope launch");
}

}  // namespace keel
