// Device fill (cudaMemset sets bytes, not f32 values), and the fault kernel of the sticky-error test hook.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_device.h"

namespace keel::cuda {

namespace {
__global__ void fault_kernel(int* bad) {
  *bad = 1;  // an address nothing maps: cudaErrorIllegalAddress, sticky
}

__global__ void fill_f32_kernel(float* dst, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}
}  // namespace

void fill_f32(float* dst, int64_t n, float value) {
  if (n <= 0) return;
  const int threads = 256;
  const int64_t want = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 65535 ? want : 65535);
  fill_f32_kernel<<<blocks, threads>>>(dst, n, value);
  check(cudaGetLastError(), "fill_f32 launch");
  check(cudaDeviceSynchronize(), "fill_f32");
}

void launch_fault(void* stream) {
  fault_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<int*>(uintptr_t{0x10}));
}

}  // namespace keel::cuda
