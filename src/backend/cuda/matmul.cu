// CUDA matmul: y[T, out] = x[T, in] · W[out, in]ᵀ (+ bias), x and y f32 (kernel_args.h). Reference: the CPU
// kernel (backend/cpu/matmul.cpp) and the float64 reference (ops/reference). Three paths:
//  - T ≤ kGemvRows (decode): one warp per output row reads the row of W once (any dtype, packed included),
//    widens it exactly and dots it with every x row in f32: bound by the weight bytes, x at full precision.
//  - dense f32 W, T > kGemvRows: cublasSgemm (CUBLAS_DEFAULT_MATH: no TF32).
//  - dense bf16 W, T > kGemvRows: x split into three bf16 parts x = hi + mid + lo (each the rounding of what
//    the earlier parts leave), three cublasGemmEx on the tensor cores with f32 accumulation into y (beta 1):
//    the parts carry x's 24 significant bits, so the products are those of f32 x (as on the CPU) at three
//    times the tensor-core work. Two parts (16 bits) measured max |Δ log-prob| 3.0e-3 on the qwen3_5_moe
//    fixture against 1e-3 allowed; three give the CPU's figures. Workspace: the three copies, 6·T·in bytes.
//  - packed (MLX affine u32) W, T > kGemvRows: tensor-core tiles (mma_tile): q in bf16 (exact) into shared
//    memory, x in three bf16 parts, each group summed as s·Σ x·q + b·Σ x.
//  - f16 W, T > kGemvRows: a tiled f32 kernel that widens each 64 × 16 tile of W into shared memory.
// The bias is written into y first and every product adds onto it.
// grouped_matmul (MoE experts, GroupedMatmulArgs): over every expert's grouped rows in one launch, x rows
// gathered as they are read: the GEMV (≤ kGemvRows tokens), the tensor-core tiles (bf16 and packed W) or
// the tiled f32 kernel (f32 and f16 W).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "backend/cuda/cublas_api.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "core/error.h"
#include "core/tensor.h"

namespace keel {

namespace {

using cuda::check_cublas;
using cuda::load_widened;
using cuda::mma_bf16;
using cuda::next_bf16_part;
using cuda::packed_weight;

constexpr int64_t kGemvRows = 8;

// W[o, i] widened to f32: dense in its dtype, or MLX affine packed (device_util.cuh's packed_weight).
__device__ __forceinline__ float weight_at(const MatmulArgs& a, int64_t o, int64_t i) {
  const char* row = a.w + o * a.w_row_bytes;
  if (a.w_bits > 0)
    return packed_weight(reinterpret_cast<const uint32_t*>(row), a.w_scales + o * a.w_scale_row_bytes,
                         a.w_biases + o * a.w_scale_row_bytes, a.w_scale_dtype, a.w_bits, a.w_group_size, i);
  return load_widened(row, a.w_dtype, i);
}

__device__ __forceinline__ const float* x_row(const MatmulArgs& a, int64_t t) {
  return reinterpret_cast<const float*>(a.x + t * a.x_row_bytes);
}
__device__ __forceinline__ float* y_row(const MatmulArgs& a, int64_t t) {
  return reinterpret_cast<float*>(a.y + t * a.y_row_bytes);
}

// x row of y row t: x_rows[t] when the rows are gathered (grouped experts), else t.
__device__ __forceinline__ const float* x_row(const MatmulArgs& a, const int32_t* x_rows, int64_t t) {
  return x_row(a, x_rows ? x_rows[t] : t);
}

// One warp per output row o over y rows [t0, t0 + n), n ≤ kGemvRows: lane l takes k = l, l + 32, …; the n
// sums are reduced across the warp by shuffles. The fallback of the vector GEMV below (rows or x not 16-byte
// aligned, `in` not a multiple of the chunk).
__device__ __forceinline__ void gemv_rows(const MatmulArgs& a, const int32_t* x_rows, int64_t o, int64_t t0,
                                          int64_t n) {
  const int lane = threadIdx.x % 32;
  float acc[kGemvRows];
  for (int t = 0; t < kGemvRows; ++t) acc[t] = 0.0f;
  for (int64_t k = lane; k < a.in; k += 32) {
    const float w = weight_at(a, o, k);
    for (int t = 0; t < kGemvRows; ++t)
      if (t < n) acc[t] = fmaf(w, x_row(a, x_rows, t0 + t)[k], acc[t]);
  }
  for (int t = 0; t < kGemvRows; ++t) {
    if (t >= n) break;
    float s = acc[t];
    for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) y_row(a, t0 + t)[o] = (a.bias ? a.bias[o] : 0.0f) + s;
  }
}

// ---- the vector GEMV (T ≤ kGemvRows): 16-byte loads ------------------------------------------------------
// One warp per output row o; lane l takes chunks l, l + 32, … of the row, kGemvUnroll chunks' loads in flight
// before their products, so a warp keeps 32·16·kGemvUnroll bytes of W in flight (the scalar GEMV above kept
// 64: bound by latency at ~5 % of the H200's bandwidth). A chunk is 16 bytes of dense W (8 bf16/f16, 4 f32)
// or 32 packed values (`bits` words: one group's, G being a multiple of 32), each widened exactly as
// weight_at widens it (packed: __fadd_rn(__fmul_rn(s, q), b)) and dotted with the x rows (float4 loads,
// fmaf in k order within the chunk). Kinds: kGemvBf16, kGemvF16, kGemvF32, or the packed bit width.
constexpr int kGemvBf16 = -1, kGemvF16 = -2, kGemvF32 = -3, kGemvUnroll = 4;

template <int kKind>
__host__ __device__ constexpr int gemv_chunk_values() {
  return kKind == kGemvF32 ? 4 : kKind < 0 ? 8 : 32;
}
template <int kKind>
__host__ __device__ constexpr int gemv_chunk_words() {  // 32-bit words of W per chunk
  return kKind < 0 ? 4 : kKind;
}

// The chunk's words: 16-byte loads where they are whole (dense, 4 and 8 bits), 8-byte (2 bits), else 4-byte.
template <int kKind>
__device__ __forceinline__ void load_chunk(const uint32_t* row, int64_t c,
                                           uint32_t (&w)[gemv_chunk_words<kKind>()]) {
  constexpr int kW = gemv_chunk_words<kKind>();
  const uint32_t* p = row + c * kW;
  if constexpr (kW % 4 == 0) {
    for (int j = 0; j < kW; j += 4) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p + j));
      w[j] = v.x, w[j + 1] = v.y, w[j + 2] = v.z, w[j + 3] = v.w;
    }
  } else if constexpr (kW == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
    for (int j = 0; j < kW; ++j) w[j] = __ldg(p + j);
  }
}

// Value j of a chunk, widened (s, b: the chunk's group scale and bias, packed only).
template <int kKind>
__device__ __forceinline__ float chunk_value(const uint32_t (&w)[gemv_chunk_words<kKind>()], int j, float s,
                                             float b) {
  if constexpr (kKind == kGemvF32) {
    return __uint_as_float(w[j]);
  } else if constexpr (kKind < 0) {
    const uint16_t h = static_cast<uint16_t>(w[j / 2] >> (16 * (j % 2)));
    return kKind == kGemvBf16 ? cuda::bf16_bits_to_f32(h) : cuda::f16_bits_to_f32(h);
  } else {
    const int bit = j * kKind, word = bit / 32, shift = bit % 32;
    uint32_t v = w[word] >> shift;
    if (shift + kKind > 32) v |= w[word + 1] << (32 - shift);
    const float q = static_cast<float>(v & ((1u << kKind) - 1u));
    return __fadd_rn(__fmul_rn(s, q), b);
  }
}

// Output rows per warp: two for a lone token (kT = 1) where a chunk is at most 4 words (dense, packed ≤ 4
// bits), their loads issued together; else one (eight tokens' sums and two rows' loads spill past 64
// registers). Two halved the warps of a decode GEMV (a 10304-row in_proj: 1.2 waves of the H200's warp
// slots, the last nearly empty) and doubled each one's bytes in flight.
template <int kKind, int kT>
__host__ __device__ constexpr int gemv_out_rows() {
  return kKind != 0 && kT == 1 && gemv_chunk_words<kKind>() <= 4 ? 2 : 1;
}

// Output rows o0 … o0 + gemv_out_rows − 1 (those < out) over y rows [t0, t0 + n), n ≤ kT: each row's sums
// are the one-row loop's, in the same order. kT: 1 (a lone token: its registers only) or kGemvRows.
template <int kKind, int kT>
__device__ __forceinline__ void gemv_vec_rows(const MatmulArgs& a, const int32_t* x_rows, int64_t o0,
                                              int64_t t0, int64_t n) {
  constexpr int kV = gemv_chunk_values<kKind>(), kW = gemv_chunk_words<kKind>(),
                kOut = gemv_out_rows<kKind, kT>();
  const int lane = threadIdx.x % 32;
  const uint32_t* row[kOut];
  bool live[kOut];
#pragma unroll
  for (int r = 0; r < kOut; ++r) {
    live[r] = o0 + r < a.out;
    row[r] = reinterpret_cast<const uint32_t*>(a.w + (live[r] ? o0 + r : o0) * a.w_row_bytes);
  }
  const int64_t chunks = a.in / kV;
  const float4* xr[kT];
#pragma unroll
  for (int t = 0; t < kT; ++t)
    xr[t] = reinterpret_cast<const float4*>(x_row(a, x_rows, t0 + (t < n ? t : 0)));
  float acc[kOut][kT];
#pragma unroll
  for (int r = 0; r < kOut; ++r)
#pragma unroll
    for (int t = 0; t < kT; ++t) acc[r][t] = 0.0f;
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * kGemvUnroll) {
    uint32_t w[kGemvUnroll][kOut][kW];
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u)
#pragma unroll
      for (int r = 0; r < kOut; ++r)
        if (live[r] && c0 + 32 * u < chunks) load_chunk<kKind>(row[r], c0 + 32 * u, w[u][r]);
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
      float s[kOut] = {}, b[kOut] = {};
      if constexpr (kKind > 0) {
        const int64_t grp = c * kV / a.w_group_size;
#pragma unroll
        for (int r = 0; r < kOut; ++r) {
          const int64_t o = live[r] ? o0 + r : o0;
          s[r] = cuda::load_widened(a.w_scales + o * a.w_scale_row_bytes, a.w_scale_dtype, grp);
          b[r] = cuda::load_widened(a.w_biases + o * a.w_scale_row_bytes, a.w_scale_dtype, grp);
        }
      }
#pragma unroll
      for (int j4 = 0; j4 < kV; j4 += 4) {
        float wv[kOut][4];
#pragma unroll
        for (int r = 0; r < kOut; ++r)
#pragma unroll
          for (int j = 0; j < 4; ++j) wv[r][j] = chunk_value<kKind>(w[u][r], j4 + j, s[r], b[r]);
#pragma unroll
        for (int t = 0; t < kT; ++t) {
          if (t >= n) break;
          const float4 x = xr[t][(c * kV + j4) / 4];
#pragma unroll
          for (int r = 0; r < kOut; ++r)
            acc[r][t] =
                fmaf(wv[r][3], x.w, fmaf(wv[r][2], x.z, fmaf(wv[r][1], x.y, fmaf(wv[r][0], x.x, acc[r][t]))));
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kOut; ++r) {
    if (!live[r]) break;
#pragma unroll
    for (int t = 0; t < kT; ++t) {
      if (t >= n) break;
      float sum = acc[r][t];
      for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
      if (lane == 0) y_row(a, t0 + t)[o0 + r] = (a.bias ? a.bias[o0 + r] : 0.0f) + sum;
    }
  }
}

// The GEMV kind of a call: the vector kind when W's rows, x's rows and `in` allow 16-byte chunks, else 0 (the
// scalar gemv_rows). Packed rows need only 4-byte alignment where a chunk's words are loaded one by one.
int gemv_kind(const MatmulArgs& a) {
  const auto aligned = [](const void* p, int64_t stride, int64_t to) {
    return (reinterpret_cast<uintptr_t>(p) % to == 0) && stride % to == 0;
  };
  if (!aligned(a.x, a.x_row_bytes, 16)) return 0;
  if (a.w_bits > 0) {
    const int64_t words = a.w_bits % 4 == 0 ? 16 : a.w_bits == 2 ? 8 : 4;
    return a.in % 32 == 0 && a.w_group_size % 32 == 0 && aligned(a.w, a.w_row_bytes, words) ? a.w_bits : 0;
  }
  if (!aligned(a.w, a.w_row_bytes, 16)) return 0;
  switch (a.w_dtype) {
    case DType::bf16:
      return a.in % 8 == 0 ? kGemvBf16 : 0;
    case DType::f16:
      return a.in % 8 == 0 ? kGemvF16 : 0;
    case DType::f32:
      return a.in % 4 == 0 ? kGemvF32 : 0;
    default:
      return 0;
  }
}

template <int kKind, int kT>
__device__ __forceinline__ void gemv_any(const MatmulArgs& a, const int32_t* x_rows, int64_t o, int64_t t0,
                                         int64_t n) {
  if constexpr (kKind == 0)
    gemv_rows(a, x_rows, o, t0, n);
  else
    gemv_vec_rows<kKind, kT>(a, x_rows, o, t0, n);
}

// Block: 8 warps (8 · gemv_out_rows output rows), all T ≤ kGemvRows rows.
template <int kKind, int kT>
__host__ __device__ constexpr int64_t gemv_block_rows() {
  return 8 * gemv_out_rows<kKind, kT>();
}
template <int kKind, int kT>
__global__ void gemv_kernel(const MatmulArgs a) {
  cuda::pdl_begin();
  const int64_t o = static_cast<int64_t>(blockIdx.x) * gemv_block_rows<kKind, kT>() +
                    threadIdx.x / 32 * gemv_out_rows<kKind, kT>();
  if (o < a.out) gemv_any<kKind, kT>(a, nullptr, o, 0, a.T);
}

// Calls launch.template operator()<kKind>() for the call's GEMV kind (launch: a struct with a member
// template, the kernels' launches below; nvcc here is C++17, no template lambdas).
template <class Launch>
void with_gemv_kind(int kind, const Launch& launch) {
  switch (kind) {
    case kGemvBf16:
      return launch.template operator()<kGemvBf16>();
    case kGemvF16:
      return launch.template operator()<kGemvF16>();
    case kGemvF32:
      return launch.template operator()<kGemvF32>();
    case 2:
      return launch.template operator()<2>();
    case 3:
      return launch.template operator()<3>();
    case 4:
      return launch.template operator()<4>();
    case 5:
      return launch.template operator()<5>();
    case 6:
      return launch.template operator()<6>();
    case 8:
      return launch.template operator()<8>();
    default:
      return launch.template operator()<0>();
  }
}

// Tiles of 64 rows of x × 64 rows of W over k in steps of 16, 256 threads, each 4 × 4 outputs; W's tile is
// widened into shared memory as it is loaded. One tile: y rows [t0, t_end) (t_end − t0 ≤ 64) × outputs
// [o0, o0 + 64). Every product is a chain of fmaf over k in order, whatever the tile: a row's result does
// not depend on the rows beside it.
constexpr int kTile = 64, kTileK = 16;
__device__ __forceinline__ void tiled_tile(const MatmulArgs& a, const int32_t* x_rows, int64_t t0,
                                           int64_t t_end, int64_t o0) {
  __shared__ float xs[kTileK][kTile + 1];                  // [k][t]
  __shared__ float ws[kTileK][kTile + 1];                  // [k][o]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // outputs o0 + tx + 16·j, t0 + ty + 16·i
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < a.in; k0 += kTileK) {
    for (int e = threadIdx.x; e < kTile * kTileK; e += blockDim.x) {
      const int r = e / kTileK, c = e % kTileK;  // consecutive threads read consecutive k of one row
      const int64_t k = k0 + c;
      const int64_t t = t0 + r, o = o0 + r;
      xs[c][r] = (t < t_end && k < a.in) ? x_row(a, x_rows, t)[k] : 0.0f;
      ws[c][r] = (o < a.out && k < a.in) ? weight_at(a, o, k) : 0.0f;
    }
    __syncthreads();
    for (int c = 0; c < kTileK; ++c) {
      float xv[4], wv[4];
      for (int i = 0; i < 4; ++i) xv[i] = xs[c][ty + 16 * i];
      for (int j = 0; j < 4; ++j) wv[j] = ws[c][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(xv[i], wv[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int64_t t = t0 + ty + 16 * i;
    if (t >= t_end) continue;
    for (int j = 0; j < 4; ++j) {
      const int64_t o = o0 + tx + 16 * j;
      if (o < a.out) y_row(a, t)[o] = (a.bias ? a.bias[o] : 0.0f) + acc[i][j];
    }
  }
}

__global__ void tiled_kernel(const MatmulArgs a) {
  cuda::pdl_begin();
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTile;
  tiled_tile(a, nullptr, t0, t0 + kTile < a.T ? t0 + kTile : a.T, static_cast<int64_t>(blockIdx.x) * kTile);
}

// ---- tensor-core tiles: bf16 W and MLX-packed W, T > kGemvRows --------------------------------------------
// y[t, o] = Σ_k x[t, k]·W[o, k] on the tensor cores (mma.sync m16n8k16, bf16 inputs, f32 accumulation),
// tiles of kMmaM rows × kMmaN outputs, k in stages of kMmaK through shared memory. Reference: tiled_tile
// above (the f32 kernel it replaces for these weights) and the CPU's kernels.
//  - x is split into three bf16 parts as it is loaded (hi + mid + lo = x, each the rounding of what the
//    earlier parts leave: x's 24 significant bits), each part multiplied on the tensor cores: the products of
//    f32 x, as the cuBLAS path computes them for dense bf16 W.
//  - bf16 W is exact in bf16: the tile is W's bits.
//  - packed W (w = s·q + b per group of G ∈ {32, 64, 128}): the tile holds q (≤ 255, exact in bf16) and each
//    group is summed in the factored form s·Σ x·q + b·Σ x: the tensor cores give Σ x·q, Σ x is a warp sum of
//    the loaded x row, and at the group's last stage every output adds s·(Σ x·q) + b·(Σ x) (f32 fmaf). A
//    stage of 32 never straddles a group: G is a multiple of 32 and so is the stage's start.
// Rounding differs from the f32 kernel's fmaf chains (the tensor cores' sums, the factored groups): within
// the f32 sums' own error (the op harness's bars); as for cuBLAS, a row's bits may depend on the rows beside
// it (docs/CUDA.md).
constexpr int kMmaM = 64, kMmaN = 128, kMmaK = 32;
constexpr int kSplitParts = 3;  // bf16 parts of x (the tiles here and the cuBLAS path below)

constexpr int kMmaRow = kMmaK + 8;  // bf16 per shared row: 80 bytes, so ldmatrix's eight rows hit 32 banks

// One stage's global loads, held in registers while the stage before it is on the tensor cores (its fields
// as the threads take them: see load_stage).
struct MmaStage {
  float4 x[2];    // x rows tid/8 and tid/8 + 32, elements k0 + 4·(tid%8) … + 3
  uint32_t w[8];  // bf16: W rows tid/4 and tid/4 + 64, elements k0 + 8·(tid%4) … + 7 (4 words each);
                  // packed: row tid/2's words holding values k0 + 16·(tid%2) … + 15 (from bit 0 of w[0])
  float s = 0, b = 0;  // packed, tid < kMmaN, at a group's first stage: output o0 + tid's scale and bias
};

// The `bits`-bit values 16h … 16h + 15 of a stage of 32 packed values (the stage's first word at `p`, the
// row's words ending at `end`) into w[0 …], shifted so value 16h + j sits at bits [j·bits, j·bits + bits).
__device__ __forceinline__ void load_packed_half(const uint32_t* p, const uint32_t* end, int bits, int h,
                                                 uint32_t (&w)[8]) {
  const int bit0 = 16 * h * bits, word0 = bit0 / 32, n = (bit0 % 32 + 16 * bits + 31) / 32;
  uint32_t v[5] = {};
#pragma unroll
  for (int j = 0; j < 5; ++j)
    if (j < n && p + word0 + j < end) v[j] = __ldg(p + word0 + j);
  const int shift = bit0 % 32;  // 0 or 16
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = shift ? (v[j] >> 16) | (v[j + 1] << 16) : v[j];
}

// Value j (0 ≤ j < 16) of a half stage loaded by load_packed_half, as bf16 bits (exact: q ≤ 255).
template <int kBits>
__device__ __forceinline__ uint32_t packed_q_bf16(const uint32_t (&w)[8], int j) {
  const int bit = j * kBits, word = bit / 32, shift = bit % 32;
  uint32_t v = w[word] >> shift;
  if (shift + kBits > 32) v |= w[word + 1] << (32 - shift);
  return __float_as_uint(static_cast<float>(v & ((1u << kBits) - 1u))) >> 16;
}
template <int kBits>
__device__ __forceinline__ void store_packed_half(const uint32_t (&w)[8], __nv_bfloat16* dst) {
  uint32_t pairs[8];
#pragma unroll
  for (int j = 0; j < 8; ++j)
    pairs[j] = packed_q_bf16<kBits>(w, 2 * j) | packed_q_bf16<kBits>(w, 2 * j + 1) << 16;
  reinterpret_cast<uint4*>(dst)[0] = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  reinterpret_cast<uint4*>(dst)[1] = make_uint4(pairs[4], pairs[5], pairs[6], pairs[7]);
}

// One tile: y rows [t0, t_end) (≤ kMmaM) × outputs [o0, o0 + kMmaN). 256 threads, 8 warps in 2 × 4, each
// 32 rows × 32 outputs: 2 × 4 fragments of 16 × 8 (mma_bf16's layouts), read from shared memory by
// ldmatrix. Stage k0's loads are issued into registers (MmaStage) before stage k0 − kMmaK's products, and
// written to shared memory (x split into its parts, packed q widened to bf16) after them: the global loads'
// latency under the tensor cores' work, two barriers a stage.
template <bool kPacked>
__device__ __forceinline__ void mma_tile(const MatmulArgs& a, const int32_t* x_rows, int64_t t0,
                                         int64_t t_end, int64_t o0) {
  __shared__ __align__(16) __nv_bfloat16 xs[kSplitParts][kMmaM][kMmaRow];  // x parts [part][t][k]
  __shared__ __align__(16) __nv_bfloat16 ws[kMmaN][kMmaRow];               // W (or q) [o][k]
  __shared__ float xsum[kMmaM];           // packed: Σ x over the group so far, per row
  __shared__ float gs[kMmaN], gb[kMmaN];  // packed: the group's scales and biases
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, i = lane % 4;
  const int wm = (warp / 4) * 32, wn = (warp % 4) * 32;
  const int G = kPacked ? a.w_group_size : kMmaK;
  // This thread's rows of x (nullptr past t_end) and of W (nullptr past out).
  const int xr = tid / 8, xc = 4 * (tid % 8);
  const float* xp[2];
  for (int h = 0; h < 2; ++h) {
    const int64_t t = t0 + xr + 32 * h;
    xp[h] = t < t_end ? x_row(a, x_rows, t) : nullptr;
  }
  const bool x_vec = reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && a.x_row_bytes % 16 == 0;
  const int wr = kPacked ? tid / 2 : tid / 4, wc = kPacked ? 16 * (tid % 2) : 8 * (tid % 4);
  const char* wp[2] = {nullptr, nullptr};
  for (int h = 0; h < (kPacked ? 1 : 2); ++h) {
    const int64_t o = o0 + wr + 64 * h;
    wp[h] = o < a.out ? a.w + o * a.w_row_bytes : nullptr;
  }
  const bool w_vec = reinterpret_cast<uintptr_t>(a.w) % 16 == 0 && a.w_row_bytes % 16 == 0;
  const int64_t row_words = kPacked ? a.in * a.w_bits / 32 : 0;
  const bool col_live = tid < kMmaN && o0 + tid < a.out;

  auto load_stage = [&](int64_t k0, MmaStage& st) {
    for (int h = 0; h < 2; ++h) {
      const int64_t k = k0 + xc;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (xp[h]) {
        if (x_vec && k + 4 <= a.in) {
          v = __ldg(reinterpret_cast<const float4*>(xp[h] + k));
        } else {
          float e[4] = {};
          for (int j = 0; j < 4; ++j)
            if (k + j < a.in) e[j] = xp[h][k + j];
          v = make_float4(e[0], e[1], e[2], e[3]);
        }
      }
      st.x[h] = v;
    }
    if constexpr (kPacked) {
      for (int j = 0; j < 8; ++j) st.w[j] = 0;
      if (wp[0]) {
        const auto* row = reinterpret_cast<const uint32_t*>(wp[0]);
        load_packed_half(row + k0 * a.w_bits / 32, row + row_words, a.w_bits, tid % 2, st.w);
      }
      if (k0 % G == 0 && col_live) {
        const int64_t grp = k0 / G, o = o0 + tid;
        st.s = cuda::load_widened(a.w_scales + o * a.w_scale_row_bytes, a.w_scale_dtype, grp);
        st.b = cuda::load_widened(a.w_biases + o * a.w_scale_row_bytes, a.w_scale_dtype, grp);
      }
    } else {
      for (int h = 0; h < 2; ++h) {
        const int64_t k = k0 + wc;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (wp[h]) {
          const auto* row = reinterpret_cast<const uint16_t*>(wp[h]);
          if (w_vec && k + 8 <= a.in) {
            v = __ldg(reinterpret_cast<const uint4*>(row + k));
          } else {
            uint32_t e[4] = {};
            for (int j = 0; j < 8; ++j)
              if (k + j < a.in) e[j / 2] |= static_cast<uint32_t>(row[k + j]) << (16 * (j % 2));
            v = make_uint4(e[0], e[1], e[2], e[3]);
          }
        }
        st.w[4 * h] = v.x, st.w[4 * h + 1] = v.y, st.w[4 * h + 2] = v.z, st.w[4 * h + 3] = v.w;
      }
    }
  };

  auto store_stage = [&](int64_t k0, const MmaStage& st) {
    const bool group_start = k0 % G == 0;
    for (int h = 0; h < 2; ++h) {
      const int r = xr + 32 * h;
      float e[4] = {st.x[h].x, st.x[h].y, st.x[h].z, st.x[h].w};
      if (kPacked) {  // Σ x of the row's 32 values: the 8 threads of the row are lanes 8m … 8m + 7
        float sum = (e[0] + e[1]) + (e[2] + e[3]);
        for (int off = 1; off < 8; off *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (tid % 8 == 0) xsum[r] = group_start ? sum : xsum[r] + sum;
      }
      for (int p = 0; p < kSplitParts; ++p) {
        __nv_bfloat16 b[4];
        for (int j = 0; j < 4; ++j) b[j] = next_bf16_part(e[j]);
        *reinterpret_cast<uint2*>(&xs[p][r][xc]) =
            make_uint2(cuda::pack_bf16(b[0], b[1]), cuda::pack_bf16(b[2], b[3]));
      }
    }
    if constexpr (kPacked) {
      __nv_bfloat16* dst = &ws[wr][wc];
      switch (a.w_bits) {
        case 2:
          store_packed_half<2>(st.w, dst);
          break;
        case 3:
          store_packed_half<3>(st.w, dst);
          break;
        case 4:
          store_packed_half<4>(st.w, dst);
          break;
        case 5:
          store_packed_half<5>(st.w, dst);
          break;
        case 6:
          store_packed_half<6>(st.w, dst);
          break;
        default:
          store_packed_half<8>(st.w, dst);
          break;
      }
      if (group_start && tid < kMmaN) gs[tid] = st.s, gb[tid] = st.b;
    } else {
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<uint4*>(&ws[wr + 64 * h][wc]) =
            make_uint4(st.w[4 * h], st.w[4 * h + 1], st.w[4 * h + 2], st.w[4 * h + 3]);
    }
  };

  float acc[2][4][4], tot[2][4][4];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[m][n][c] = 0.0f, tot[m][n][c] = 0.0f;
  MmaStage next;
  load_stage(0, next);
  for (int64_t k0 = 0; k0 < a.in; k0 += kMmaK) {
    const bool group_end = (k0 + kMmaK) % G == 0;
    __syncthreads();  // the last stage's fragments and fold are read
    store_stage(k0, next);
    __syncthreads();
    if (k0 + kMmaK < a.in) load_stage(k0 + kMmaK, next);  // in flight under this stage's products
#pragma unroll
    for (int kk = 0; kk < kMmaK; kk += 16) {
      uint32_t b[4][2];
#pragma unroll
      for (int np = 0; np < 2; ++np) {  // matrices: n-tiles 2np, 2np + 1 × k halves
        const int mi = lane / 8;
        uint32_t r[4];
        cuda::ldmatrix_x4<false>(r, &ws[wn + 16 * np + lane % 8 + 8 * (mi / 2)][kk + 8 * (mi % 2)]);
        b[2 * np][0] = r[0], b[2 * np][1] = r[1], b[2 * np + 1][0] = r[2], b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int p = 0; p < kSplitParts; ++p)
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          uint32_t af[4];  // matrices: rows 0–7 / 8–15 × k 0–7, then × k 8–15
          cuda::ldmatrix_x4<false>(
              af, &xs[p][wm + 16 * m + lane % 8 + 8 * ((lane / 8) % 2)][kk + 8 * (lane / 16)]);
#pragma unroll
          for (int n = 0; n < 4; ++n) mma_bf16(acc[m][n], af, b[n][0], b[n][1]);
        }
    }
    if (kPacked && group_end)
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int r = wm + 16 * m + g + (c >= 2 ? 8 : 0), col = wn + 8 * n + 2 * i + (c & 1);
            tot[m][n][c] = fmaf(gs[col], acc[m][n][c], fmaf(gb[col], xsum[r], tot[m][n][c]));
            acc[m][n][c] = 0.0f;
          }
  }
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t t = t0 + wm + 16 * m + g + (c >= 2 ? 8 : 0), o = o0 + wn + 8 * n + 2 * i + (c & 1);
        if (t < t_end && o < a.out)
          y_row(a, t)[o] = (a.bias ? a.bias[o] : 0.0f) + (kPacked ? tot[m][n][c] : acc[m][n][c]);
      }
}

template <bool kPacked>
__global__ void __launch_bounds__(256, 2) mma_kernel(const MatmulArgs a) {
  cuda::pdl_begin();
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kMmaM;
  mma_tile<kPacked>(a, nullptr, t0, t0 + kMmaM < a.T ? t0 + kMmaM : a.T,
                    static_cast<int64_t>(blockIdx.x) * kMmaN);
}

// The tensor-core tiles take bf16 and packed W (f32 and f16 W are not exact in bf16: the f32 kernel).
__host__ __device__ inline bool mma_weights(const MatmulArgs& a) {
  return a.w_bits > 0 || a.w_dtype == DType::bf16;
}

// ---- grouped experts (GroupedMatmulArgs): one launch per call --------------------------------------------
// The experts' weight pointers travel in the kernel's parameters (12 KiB: CUDA 12.1+ allows 32 KiB), so
// nothing is uploaded per call. Each expert's grouped rows are cut into tiles of BM rows, expert after
// expert; block y takes tile blockIdx.y (and every gridDim.y-th after it) and finds its expert from the
// device offsets: no host sync, one grid sized by the most tiles R/BM + min(E, R) can need.
struct ExpertPointers {
  const char* w[kMoeMaxExperts];
  const char* scales[kMoeMaxExperts];
  const char* biases[kMoeMaxExperts];
};

struct Tile {
  int expert;
  int64_t row0, rows;
};

// Tile `tile` of the grouped rows cut into tiles of bm rows per expert; rows 0 past the last tile. Every
// thread of the block (blockDim.x ≤ 1024, a multiple of 32) calls: each thread owns a run of consecutive
// experts, the block scans the runs' tile counts (warp shuffles, then the warps' totals in order).
__device__ Tile find_tile(const int32_t* offsets, int E, int bm, int64_t tile) {
  __shared__ int64_t warp_total[32];
  __shared__ Tile found;
  const int per = (E + blockDim.x - 1) / blockDim.x;
  const int e0 = threadIdx.x * per, e1 = min(E, e0 + per);
  auto tiles_of = [&](int e) { return (static_cast<int64_t>(offsets[e + 1] - offsets[e]) + bm - 1) / bm; };
  int64_t mine = 0;
  for (int e = e0; e < e1; ++e) mine += tiles_of(e);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int64_t incl = mine;
  for (int d = 1; d < 32; d *= 2) {
    const int64_t v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += v;
  }
  if (threadIdx.x == 0) found = Tile{0, 0, 0};
  if (lane == 31) warp_total[warp] = incl;
  __syncthreads();
  int64_t before = incl - mine;
  for (int w = 0; w < warp; ++w) before += warp_total[w];
  if (tile >= before && tile < before + mine) {
    for (int e = e0; e < e1; ++e) {
      const int64_t n = tiles_of(e);
      if (tile < before + n) {
        const int64_t first = offsets[e] + (tile - before) * bm;
        found = Tile{e, first, min(static_cast<int64_t>(bm), static_cast<int64_t>(offsets[e + 1]) - first)};
        break;
      }
      before += n;
    }
  }
  __syncthreads();
  const Tile t = found;
  __syncthreads();  // `found` and `warp_total` may be written by the next call
  return t;
}

__device__ __forceinline__ MatmulArgs expert_args(const MatmulArgs& m, const ExpertPointers& p, int e) {
  MatmulArgs a = m;
  a.w = p.w[e];
  if (a.w_bits > 0) a.w_scales = p.scales[e], a.w_biases = p.biases[e];
  return a;
}

// Decode (≤ kGemvRows tokens): tiles of ≤ kGemvRows rows, 8 warps per block (gemv_block_rows outputs).
template <int kKind, int kT>
__global__ void grouped_gemv_kernel(const MatmulArgs m, const ExpertPointers p, const int32_t* offsets,
                                    const int32_t* x_rows, int E, int64_t max_tiles) {
  cuda::pdl_begin();
  for (int64_t tile = blockIdx.y; tile < max_tiles; tile += gridDim.y) {
    const Tile t = find_tile(offsets, E, kGemvRows, tile);
    if (t.rows == 0) return;
    const MatmulArgs a = expert_args(m, p, t.expert);
    const int64_t o = static_cast<int64_t>(blockIdx.x) * gemv_block_rows<kKind, kT>() +
                      threadIdx.x / 32 * gemv_out_rows<kKind, kT>();
    if (o < a.out) gemv_any<kKind, kT>(a, x_rows, o, t.row0, t.rows);
  }
}

struct GemvLaunch {
  const MatmulArgs& a;
  cudaStream_t s;
  template <int kKind>
  void operator()() const {
    if (a.T == 1)
      launch<kKind, 1>();
    else
      launch<kKind, kGemvRows>();
  }
  template <int kKind, int kT>
  void launch() const {
    constexpr int64_t rows = gemv_block_rows<kKind, kT>();
    cuda::launch(gemv_kernel<kKind, kT>, static_cast<unsigned>((a.out + rows - 1) / rows), 256, 0, s, a);
  }
};
struct GroupedGemvLaunch {
  dim3 grid;
  cudaStream_t s;
  const MatmulArgs& a;
  const ExpertPointers& p;
  const int32_t *offsets, *x_rows;
  int E;
  int64_t max_tiles;
  bool one_token;
  template <int kKind>
  void operator()() const {
    if (one_token)  // each expert's tile is its one row
      launch<kKind, 1>();
    else
      launch<kKind, kGemvRows>();
  }
  template <int kKind, int kT>
  void launch() const {
    constexpr int64_t rows = gemv_block_rows<kKind, kT>();
    const dim3 g(static_cast<unsigned>((a.out + rows - 1) / rows), grid.y);  // grid.y: the tiles
    cuda::launch(grouped_gemv_kernel<kKind, kT>, g, 256, 0, s, a, p, offsets, x_rows, E, max_tiles);
  }
};

// The vector kind when it holds for every expert's rows, else 0.
int grouped_gemv_kind(const GroupedMatmulArgs& g) {
  MatmulArgs a = g.m;
  a.w = g.w[0];
  const int kind = gemv_kind(a);
  for (int64_t e = 1; e < g.E && kind != 0; ++e) {
    a.w = g.w[e];
    if (gemv_kind(a) != kind) return 0;
  }
  return kind;
}

// Prefill: tiles of 64 rows × 64 outputs, the dense tiled kernel's tile.
__global__ void grouped_tiled_kernel(const MatmulArgs m, const ExpertPointers p, const int32_t* offsets,
                                     const int32_t* x_rows, int E, int64_t max_tiles) {
  cuda::pdl_begin();
  for (int64_t tile = blockIdx.y; tile < max_tiles; tile += gridDim.y) {
    const Tile t = find_tile(offsets, E, kTile, tile);
    if (t.rows == 0) return;
    tiled_tile(expert_args(m, p, t.expert), x_rows, t.row0, t.row0 + t.rows,
               static_cast<int64_t>(blockIdx.x) * kTile);
  }
}

// Prefill on the tensor cores: tiles of kMmaM rows × kMmaN outputs (bf16 and packed W).
template <bool kPacked>
__global__ void __launch_bounds__(256, 2)
    grouped_mma_kernel(const MatmulArgs m, const ExpertPointers p, const int32_t* offsets,
                       const int32_t* x_rows, int E, int64_t max_tiles) {
  cuda::pdl_begin();
  for (int64_t tile = blockIdx.y; tile < max_tiles; tile += gridDim.y) {
    const Tile t = find_tile(offsets, E, kMmaM, tile);
    if (t.rows == 0) return;
    mma_tile<kPacked>(expert_args(m, p, t.expert), x_rows, t.row0, t.row0 + t.rows,
                      static_cast<int64_t>(blockIdx.x) * kMmaN);
  }
}

// y rows = bias (or 0), before the cuBLAS products add onto them.
__global__ void init_rows_kernel(const MatmulArgs a) {
  cuda::pdl_begin();
  const int64_t t = blockIdx.y;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < a.out;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y_row(a, t)[o] = a.bias ? a.bias[o] : 0.0f;
}

// part p [t, k] = bf16(x[t, k] − Σ_{q<p} part q [t, k]) (each difference exact in f32); parts [T, in]
// contiguous, `part_stride` elements apart.
__global__ void split_bf16_kernel(const MatmulArgs a, __nv_bfloat16* parts, int64_t part_stride) {
  cuda::pdl_begin();
  const int64_t t = blockIdx.y;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < a.in;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float rest = x_row(a, t)[k];
    for (int p = 0; p < kSplitParts; ++p) parts[p * part_stride + t * a.in + k] = next_bf16_part(rest);
  }
}

bool int_sized(const MatmulArgs& a) {
  const int64_t elem = static_cast<int64_t>(dtype_info(a.w_dtype).block_bytes);
  return std::max({a.T, a.in, a.out, a.x_row_bytes / 4, a.y_row_bytes / 4, a.w_row_bytes / elem}) <=
         std::numeric_limits<int>::max();
}

bool uses_split_bf16(const MatmulArgs& a) {
  return a.T > kGemvRows && a.w_dtype == DType::bf16 && a.w_bits == 0 && int_sized(a);
}

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// Rows are launched along grid y (≤ 65535 per launch).
template <class Launch>
void for_row_batches(int64_t T, Launch launch) {
  for (int64_t t0 = 0; t0 < T; t0 += 65535) launch(t0, T - t0 < 65535 ? T - t0 : 65535);
}

MatmulArgs rows_from(const MatmulArgs& a, int64_t t0, int64_t n) {
  MatmulArgs b = a;
  b.x = a.x + t0 * a.x_row_bytes;
  b.y = a.y + t0 * a.y_row_bytes;
  b.T = n;
  return b;
}

}  // namespace

int64_t CudaBackend::matmul_workspace(const MatmulArgs& a) const {
  if (a.T == 0 || a.out == 0 || !uses_split_bf16(a)) return 0;
  return 2 * kSplitParts * a.T * a.in;
}

void CudaBackend::matmul(const MatmulArgs& a) {
  if (a.T == 0 || a.out == 0) return;
  enter();
  cudaStream_t s = stream();
  if (a.T <= kGemvRows) {
    with_gemv_kind(gemv_kind(a), GemvLaunch{a, s});
    cuda::check(cudaGetLastError(), "matmul (gemv) launch");
    return;
  }
  // Packed W: the tensor-core tiles. cuBLAS takes int sizes and leading dimensions: beyond them (row strides
  // past 2^31 elements) the tiles, whose offsets are int64, do the product (f32 W: the f32 kernel).
  if (a.w_bits > 0 || (a.w_dtype == DType::bf16 && !int_sized(a))) {
    for (int64_t t0 = 0; t0 < a.T; t0 += int64_t{65535} * kMmaM) {
      const int64_t n = a.T - t0 < int64_t{65535} * kMmaM ? a.T - t0 : int64_t{65535} * kMmaM;
      const dim3 grid(static_cast<unsigned>((a.out + kMmaN - 1) / kMmaN),
                      static_cast<unsigned>((n + kMmaM - 1) / kMmaM));
      if (a.w_bits > 0)
        cuda::launch(mma_kernel<true>, grid, 256, 0, s, rows_from(a, t0, n));
      else
        cuda::launch(mma_kernel<false>, grid, 256, 0, s, rows_from(a, t0, n));
      cuda::check(cudaGetLastError(), "matmul (tensor-core tiles) launch");
    }
    return;
  }
  if (a.w_dtype == DType::f16 || !int_sized(a)) {
    for (int64_t t0 = 0; t0 < a.T; t0 += int64_t{65535} * kTile) {
      const int64_t n = a.T - t0 < int64_t{65535} * kTile ? a.T - t0 : int64_t{65535} * kTile;
      const dim3 grid(static_cast<unsigned>((a.out + kTile - 1) / kTile),
                      static_cast<unsigned>((n + kTile - 1) / kTile));
      cuda::launch(tiled_kernel, grid, 256, 0, s, rows_from(a, t0, n));
      cuda::check(cudaGetLastError(), "matmul (tiled) launch");
    }
    return;
  }
  // cuBLAS, column-major: y viewed as [out × T] (ld = y row floats) = Wᵀ-as-stored [in × out]ᵀ · x [in × T].
  const int64_t ldx = a.x_row_bytes / 4, ldy = a.y_row_bytes / 4;
  const int64_t ldw = a.w_row_bytes / static_cast<int64_t>(dtype_info(a.w_dtype).block_bytes);
  for_row_batches(a.T, [&](int64_t t0, int64_t n) {
    cuda::launch(init_rows_kernel, dim3(blocks_for(a.out, 256), static_cast<unsigned>(n)), 256, 0, s,
                 rows_from(a, t0, n));
  });
  cuda::check(cudaGetLastError(), "matmul (bias) launch");
  const float one = 1.0f;
  if (a.w_dtype == DType::f32) {
    check_cublas(cuda::cublas().sgemm(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.out),
                                      static_cast<int>(a.T), static_cast<int>(a.in), &one,
                                      reinterpret_cast<const float*>(a.w), static_cast<int>(ldw),
                                      reinterpret_cast<const float*>(a.x), static_cast<int>(ldx), &one,
                                      reinterpret_cast<float*>(a.y), static_cast<int>(ldy)),
                 "matmul (sgemm)");
    return;
  }
  Tensor split = Tensor::empty(pool(), DType::u8, {matmul_workspace(a)}, "matmul x in bf16 parts");
  auto* parts = static_cast<__nv_bfloat16*>(split.data());
  const int64_t part_stride = a.T * a.in;
  for_row_batches(a.T, [&](int64_t t0, int64_t n) {
    cuda::launch(split_bf16_kernel, dim3(blocks_for(a.in, 256), static_cast<unsigned>(n)), 256, 0, s,
                 rows_from(a, t0, n), parts + t0 * a.in, part_stride);
  });
  cuda::check(cudaGetLastError(), "matmul (split) launch");
  for (int p = 0; p < kSplitParts; ++p)
    check_cublas(cuda::cublas().gemm_ex(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.out),
                                        static_cast<int>(a.T), static_cast<int>(a.in), &one, a.w, CUDA_R_16BF,
                                        static_cast<int>(ldw), parts + p * part_stride, CUDA_R_16BF,
                                        static_cast<int>(a.in), &one, a.y, CUDA_R_32F, static_cast<int>(ldy),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "matmul (bf16 gemm)");
}

int64_t CudaBackend::grouped_matmul_workspace(const GroupedMatmulArgs&) const {
  return 0;  // weights widened tile by tile in shared memory
}

void CudaBackend::grouped_matmul(const GroupedMatmulArgs& g) {
  const MatmulArgs& m = g.m;
  if (m.T == 0 || m.out == 0) return;
  if (g.E <= 0 || g.E > kMoeMaxExperts)
    throw_error(ErrorCode::invalid_argument, "grouped_matmul: {} experts (1 to {})", g.E, kMoeMaxExperts);
  enter();
  ExpertPointers p{};
  for (int64_t e = 0; e < g.E; ++e) {
    p.w[e] = g.w[e];
    if (m.w_bits > 0) p.scales[e] = g.w_scales[e], p.biases[e] = g.w_biases[e];
  }
  MatmulArgs a = m;
  a.bias = nullptr;
  const bool gemv = g.tokens <= kGemvRows, mma = !gemv && mma_weights(m);
  const int64_t bm = gemv ? kGemvRows : mma ? kMmaM : kTile;
  const int64_t bn = gemv ? 8 : mma ? kMmaN : kTile;  // outputs per block (the GEMV's launch sets its own)
  const int64_t max_tiles = (m.T + bm - 1) / bm + std::min<int64_t>(g.E, m.T);
  const dim3 grid(static_cast<unsigned>((m.out + bn - 1) / bn), cuda::grid_blocks(max_tiles));
  const int E = static_cast<int>(g.E);
  if (gemv)
    with_gemv_kind(grouped_gemv_kind(g),
                   GroupedGemvLaunch{grid, stream(), a, p, g.offsets, g.x_rows, E, max_tiles, g.tokens == 1});
  else if (mma && m.w_bits > 0)
    cuda::launch(grouped_mma_kernel<true>, grid, 256, 0, stream(), a, p, g.offsets, g.x_rows, E, max_tiles);
  else if (mma)
    cuda::launch(grouped_mma_kernel<false>, grid, 256, 0, stream(), a, p, g.offsets, g.x_rows, E, max_tiles);
  else
    cuda::launch(grouped_tiled_kernel, grid, 256, 0, stream(), a, p, g.offsets, g.x_rows, E, max_tiles);
  cuda::check(cudaGetLastError(), "grouped_matmul launch");
}

}  // namespace keel
