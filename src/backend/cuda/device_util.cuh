// Device helpers shared by the CUDA kernel families (backend/cuda/*.cu): widening loads of stored
// f32/bf16/f16 values, readers for ParamVec / NormWeight (whose data is a DEVICE pointer here; ParamVec::at
// is host-only), the MLX packed-element reader matmul.cu and embedding.cu share, block reductions, and the
// host-side grid arithmetic every launch uses, and the tensor-core pieces (bf16 parts of an f32 value, the
// m16n8k16 mma in bf16 and f16, ldmatrix, cp.async) matmul.cu and attention.cu share. Included only by .cu
// files.
//
// Rounding: the CPU kernels are compiled without FMA contraction of a·b + c (no -mfma on the generic
// objects), nvcc contracts by default; where the CPU rounds a product before a sum, the kernels here say so
// with __fmul_rn / __fadd_rn (which nvcc never fuses), so both give the same bits where the CPU's math is
// scalar.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

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

// ---- tensor cores (sm_80+: mma.sync m16n8k16 bf16, ldmatrix) ---------------------------------------------
// An f32 x is carried exactly by three bf16 parts x = hi + mid + lo, each the rounding of what the earlier
// parts leave (x's 24 significant bits; every difference exact in f32), so Σ over parts of bf16 products
// with f32 accumulation gives f32-grade products on the tensor cores.

// The next bf16 part of x: the rounding of what the earlier parts leave in `rest`, which keeps the remainder.
__device__ __forceinline__ __nv_bfloat16 next_bf16_part(float& rest) {
  const __nv_bfloat16 h = __float2bfloat16_rn(rest);
  rest -= __bfloat162float(h);
  return h;
}

// d += a·b for one m16n8k16 fragment (bf16 in, f32 accumulation). Fragment layouts (PTX ISA): lane 4·g + i
// holds A rows g, g + 8 at k 2i, 2i + 1 (a0, a1) and 2i + 8, 2i + 9 (a2, a3); B column g at k 2i, 2i + 1
// (b0) and 2i + 8, 2i + 9 (b1); C rows g (d0, d1) and g + 8 (d2, d3) at columns 2i, 2i + 1. In each 32-bit
// register the lower k (or column) sits in the low half.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8×8 bf16 matrices from shared memory: lanes 8·j … 8·j + 7 give the 16-byte-aligned addresses of
// matrix j's eight rows; lane 4·g + i receives row g's elements 2i, 2i + 1 of each (r[j]), or with kTrans
// column g's elements at rows 2i, 2i + 1.
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// d += a·b for one m16n8k16 fragment, f16 in, f32 accumulation (the layouts of mma_bf16).
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two f16 values as one f16x2 register (lo in the low half).
__device__ __forceinline__ uint32_t pack_f16(__half lo, __half hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) | static_cast<uint32_t>(__half_as_ushort(hi)) << 16;
}

// ---- asynchronous copies into shared memory (sm_80+: cp.async) ------------------------------------------
// 16 bytes from global `src` to shared `dst` (both 16-byte aligned), of which the first `src_bytes` (0 or 16)
// are read and the rest zero-filled; issued now, complete after cp_async_wait and a barrier.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(src), "r"(src_bytes)
               : "memory");
}
// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Two floats as one bf16x2 register (lo in the low half).
__device__ __forceinline__ uint32_t pack_bf16(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) | static_cast<uint32_t>(__bfloat16_as_ushort(hi))
                                                               << 16;
}

// ---- launch arithmetic (host) -----------------------------------------------------------------------------

constexpr int kThreads = 256;        // threads per block of every kernel here (a multiple of 32)
constexpr int64_t kGridCap = 65535;  // blocks per grid dimension at most (kernels loop over the rest)

// Blocks to cover `items` items at `per_block` items per block, at least 1 and at most kGridCap.
inline unsigned grid_blocks(int64_t items, int64_t per_block = 1) {
  const int64_t b = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : b > kGridCap ? kGridCap : b);
}

// ---- launches: programmatic dependent launch (sm_90+)
// ------------------------------------------------------ Every kernel here starts with pdl_begin() and is
// launched by launch(): on a device of compute capability 9 or more, with programmatic stream serialization,
// so the next kernel of the stream is scheduled while this one drains instead of after it (its blocks take
// their SMs as this one's leave), which hides most of the launch and ramp a small kernel costs: a decode step
// is ~500 launches of 3–12 µs each (ncu, H200, docs/CUDA.md). pdl_begin() first lets the stream's next kernel
// launch, then waits until every kernel before this one has finished and its writes are visible
// (griddepcontrol.wait) — before the kernel reads or writes anything, so the stream's order is kept exactly
// as without it: only block scheduling moves. A kernel launched without the attribute (cuBLAS's, CUB's,
// fill.cu's) simply waits for what precedes it, as a kernel after it waits for it. KEEL_CUDA_PDL=0 in the
// environment launches without the attribute (the A/B of docs/CUDA.md).
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory");
#endif
}

// Whether launches use programmatic stream serialization: the current device at the first call has compute
// capability ≥ 9 and KEEL_CUDA_PDL is not "0" (asked once per process).
bool pdl_enabled();

// kernel<<<grid, block, smem, stream>>>(args...) with the attribute when pdl_enabled(); a launch error is
// left for the caller's cudaGetLastError check, as after <<<>>>.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  if (pdl_enabled()) config.attrs = &attr, config.numAttrs = 1;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace keel::cuda
