// CUDA embedding lookup: out[t, :] = table[ids[t], :] widened to f32 (dense f32/bf16/f16 rows), or the packed
// row dequantized element by element (device_util.cuh packed_weight: the CPU's values).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

// Blocks stride over tokens (y) and over a row's d elements (x, kThreads per block).
__global__ void embedding_kernel(EmbeddingArgs a) {
  cuda::pdl_begin();
  for (int64_t t = blockIdx.y; t < a.T; t += gridDim.y) {
    const int64_t id = a.ids[t];
    auto* out = reinterpret_cast<float*>(a.out + t * a.out_row_bytes);
    const char* row = a.table + id * a.row_bytes;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    if (a.bits == 0) {
      for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.d; i += step)
        out[i] = cuda::load_widened(row, a.dtype, i);
    } else {
      const auto* words = reinterpret_cast<const uint32_t*>(row);
      const char* scales = a.scales + id * a.scale_row_bytes;
      const char* biases = a.biases + id * a.scale_row_bytes;
      for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.d; i += step)
        out[i] = cuda::packed_weight(words, scales, biases, a.scale_dtype, a.bits, a.group_size, i);
    }
  }
}

}  // namespace

void CudaBackend::embedding(const EmbeddingArgs& a) {
  enter();
  if (a.T == 0 || a.d == 0) return;
  const dim3 grid(cuda::grid_blocks(a.d, cuda::kThreads), cuda::grid_blocks(a.T));
  cuda::launch(embedding_kernel, grid, cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "embedding launch");
}

}  // namespace keel
