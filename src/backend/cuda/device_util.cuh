// Device helpers shared by the CUDA kernel families (backend/cuda/*.cu): widening loads of stored
// f32/bf16/f16 values, readers for ParamVec / NormWeight (whose data is a DEVICE pointer here; ParamVec::at
// is host-only), the MLX packed-element reader matmul.cu and embedding.cu share, block reductions, and the
// host-side grid arithmetic every launch uses. Included only by .cu files.
//
// Rounding: the CPU kernels are compiled without FMA contraction of a·b + c (no -mfma on the generic
// objects), nvcc contracts by default; where the CPU rounds a product before a sum, the kernels here say so
// with __fmul_rn / __fadd_rn (which nvcc never fuses), so both give the same bits where the CPU's math is
// scalar.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/kernel_args.h"
#include "core/dtype.h"

namespace keel::cuda {

// ---- widening loads ---------------------------------------------------------------------------------------

__device__ inline float bf16_bits_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}
__device__ inline float f16_bits_to_f32(uint16_t h) {
  return __half2float(__ushort_as_half(h));  // exact, subnormals and inf/NaN included
}

// Element i of a stored vector p of `dtype` (f32, bf16 or f16; anything else reads as f32) widened to f32.
__device__ inline float load_widened(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::bf16:
      return bf16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::f16:
      return f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

// ParamVec element i (v.data a device pointer), the device twin of ParamVec::at.
__device__ inline float param_at(const ParamVec& v, int64_t i) {
  return load_widened(v.data, v.dtype, i);
}

// NormWeight element i as stored (w.one_plus is the caller's: it multiplies by 1 + w).
__device__ inline float norm_weight_at(const NormWeight& w, int64_t i) {
  return load_widened(w.data, w.dtype, i);
}

// ---- packed (MLX affine) weights --------------------------------------------------------------------------

// The unsigned `bits`-bit value of element i of a packed row: bits [i·bits, i·bits + bits) of the row's
// little-endian bit stream of 32-bit words (3/5/6-bit values may straddle two words; the second word is read
// only when they do, so nothing past the row's last value is touched). bits ∈ {2, 3, 4, 5, 6, 8}.
__device__ inline uint32_t packed_value(const uint32_t* row_words, int bits, int64_t i) {
  const int64_t bit = i * bits;
  const int64_t word = bit >> 5;
  const int shift = static_cast<int>(bit & 31);
  uint32_t v = row_words[word] >> shift;
  if (shift + bits > 32) v |= row_words[word + 1] << (32 - shift);
  return v & ((1u << bits) - 1u);
}

// Element i of a packed row dequantized: W = scale·q + bias of its group (i / group_size), scales and biases
// rows in scale_dtype (f32/bf16/f16). The product is rounded before the sum, as the CPU's generic kernel does
// (with bf16/f16 scales the product is exact, so every CPU ISA gives these bits too).
//   row_words: the row's words (device); scales_row / biases_row: the row's [in / group_size] scales and
//   biases.
__device__ inline float packed_weight(const uint32_t* row_words, const char* scales_row,
                                      const char* biases_row, DType scale_dtype, int bits, int group_size,
                                      int64_t i) {
  const int64_t g = i / group_size;
  const float q = static_cast<float>(packed_value(row_words, bits, i));
  return __fadd_rn(__fmul_rn(load_widened(scales_row, scale_dtype, g), q),
                   load_widened(biases_row, scale_dtype, g));
}

// ---- activations (the CPU's formulas, libm-accurate CUDA functions) ---------------------------------------

__device__ inline float silu(float x) {
  return x / (1.0f + expf(-x));
}
__device__ inline float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// ---- strided loops with their loads in flight together
// ----------------------------------------------------- use(i, load(i)) for i = first, first + step, … < n,
// ascending, kRound at a time: the round's loads first (load returns what use needs: a float, a float2, …),
// then the uses in order. A thread's loads issued one after the other, each waiting for the last, made the
// few-element-per-thread loops of a decode step latency-bound (rms_norm 12 µs a launch on a 2688-float row,
// ncu, H200); the order of the uses, and so every sum, is the plain strided loop's.
template <int kRound = 8, class Load, class Use>
__device__ __forceinline__ void strided(int64_t first, int64_t n, int64_t step, Load load, Use use) {
  for (int64_t base = first; base < n; base += kRound * step) {
    decltype(load(base)) v[kRound];
#pragma unroll
    for (int u = 0; u < kRound; ++u)
      if (base + u * step < n) v[u] = load(base + u * step);
#pragma unroll
    for (int u = 0; u < kRound; ++u)
      if (base + u * step < n) use(base + u * step, v[u]);
  }
}

// ---- block reductions -------------------------------------------------------------------------------------
// blockDim.x a multiple of 32 (≤ 1024); every thread of the block calls, and every thread gets the result.
// The combination order depends only on blockDim.x (warp butterflies, then the warps' partials in warp
// order), so a row's result depends only on its values and the launch's block size: the kernels fix the block
// size. Each call starts with a __syncthreads, so calls may follow one another in one kernel.

template <class T>
__device__ inline T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline double block_sum(double v) {
  __shared__ double part[32];
  v = warp_sum(v);
  __syncthreads();  // part[] may still be read by a previous call
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  double total = part[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) total += part[w];
  return total;
}

// Largest of the block's values by `u > v ? u : v` (the CPU's scan): a NaN is never taken over a number, so
// where a NaN lands depends on the order; callers whose result is NaN for such a row anyway (softmax) use it.
__device__ inline float block_max(float v) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = part[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) m = part[w] > m ? part[w] : m;
  return m;
}

// ---- launch arithmetic (host) -----------------------------------------------------------------------------

constexpr int kThreads = 256;        // threads per block of every kernel here (a multiple of 32)
constexpr int64_t kGridCap = 65535;  // blocks per grid dimension at most (kernels loop over the rest)

// Blocks to cover `items` items at `per_block` items per block, at least 1 and at most kGridCap.
inline unsigned grid_blocks(int64_t items, int64_t per_block = 1) {
  const int64_t b = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : b > kGridCap ? kGridCap : b);
}

}  // namespace keel::cuda
