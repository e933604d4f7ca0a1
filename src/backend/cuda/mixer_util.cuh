// Device-side helpers of the stateful mixers and attention (ssd_scan.cu, gated_deltanet.cu, attention.cu):
// reading a ParamVec element on the device, warp reductions, the dynamic shared memory opt-in, the flat grid.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_device.h"
#include "backend/kernel_args.h"
#include "core/error.h"

namespace keel::cuda::mixer {

constexpr int kWarp = 32;
constexpr int64_t kDefaultSharedBytes = 48 * 1024;  // above this a kernel must opt in (per kernel function)
constexpr int64_t kMaxBlocks = 2147483647;          // gridDim.x limit (2³¹ − 1)

// Element i of a [n] parameter vector in device memory, widened to f32 (ParamVec::at is host-only).
__device__ __forceinline__ float param(const ParamVec& p, int64_t i) {
  const uint16_t* h = static_cast<const uint16_t*>(p.data);
  switch (p.dtype) {
    case DType::bf16:
      return __uint_as_float(static_cast<uint32_t>(h[i]) << 16);
    case DType::f16:
      return __half2float(__ushort_as_half(h[i]));
    default:
      return static_cast<const float*>(p.data)[i];
  }
}

// softplus(v) = log(1 + e^v), v > 20 passing through (torch's F.softplus, as the CPU kernels do).
__device__ __forceinline__ float softplus(float v) {
  return v > 20.0f ? v : log1pf(expf(v));
}

// Sum / max over the 32 lanes of a warp (every lane gets the result; fixed butterfly order).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Blocks of a flat 1-D grid, refused (Error(unsupported) naming the op) past gridDim.x's limit.
inline unsigned int grid_blocks(int64_t blocks, const char* op) {
  if (blocks > kMaxBlocks)
    throw_error(ErrorCode::unsupported, "{}: {} thread blocks exceed the CUDA grid limit", op, blocks);
  return static_cast<unsigned int>(blocks);
}

// Lets `kernel` take `bytes` of dynamic shared memory (the opt-in above 48 KiB; H200: up to 227 KiB per
// block). A size past the current device's limit is Error(unsupported) naming `op`, both sizes, before
// anything is launched (the shapes ask too much: a wider head, a longer chunk).
template <typename Kernel>
void allow_shared(Kernel kernel, int64_t bytes, const char* op) {
  if (bytes <= kDefaultSharedBytes) return;
  int device = 0, most = 0;
  check(cudaGetDevice(&device), op);
  check(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), op);
  if (bytes > most)
    throw_error(ErrorCode::unsupported, "{}: {} bytes per block, the device allows {}", op, bytes, most);
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        op);
}

}  // namespace keel::cuda::mixer
