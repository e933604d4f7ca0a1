// Causal attention on CUDA (math: ops/attention.h; the CPU kernel: backend/cpu/attention.cpp; the float64
// reference: ops/reference/). Flash style: one block per (query tile of kRows positions, query head), the
// online softmax in f32 (running max m and sum l per row), keys in tiles of kKeyTile at the fixed absolute
// boundaries 0, 64, 128, … (the op's reduction order), each tile's K and V staged through shared memory in
// halves of kSub rows. Query i (absolute position offset + i) sees keys [0, offset + i]; GQA: query head h
// reads KV head h / (n_q / n_kv). Per tile, as the CPU: m' = max(m, tile max), α = e^{m − m'},
// p_j = e^{s_j − m'}, l ← α·l + Σp, o ← α·o + Σ p_j·v_j; at the end o / l (times 1/l). Nothing of size T ×
// kv_len exists anywhere.
// Steps of one key run with head_dim ≤ 256 (prefill, and decode over short caches) take the same math on the
// tensor cores (mma_attention_kernel below: q, k, v and p in three bf16 parts each); the f32 kernel here is
// its reference and takes wider heads and the split runs of misaligned rows.
// Split keys (flash-decoding) for steps of one query tile (T ≤ kRows: decode) over a long cache (≥
// 2·kMinSplitTiles tiles; shorter caches keep one run, whose result is bitwise the one-shot prefill's): over
// an f16 cache with D, Dv ≤ 256 and 16-byte-aligned rows, group_decode_f16_kernel below (a block per KV head,
// 16 of its query rows and run, on the tensor cores); else where the rows are float4-aligned, decode_kernel
// (a warp per 32 keys, one block per row, head and run); else the tile kernel's S runs of whole tiles, grid
// y = S (so ⌈T/kRows⌉·n_q·S blocks fill the device where n_q alone would leave most SMs idle). Each run's
// block writes its rows' m, l and unnormalized o to the workspace, and combine_kernel merges the runs:
// M = max m_s, w_s = e^{m_s − M}, o = Σ w_s·o_s / Σ w_s·l_s.
// S depends on the step's kv length, T·n_q and the device's SM count; a row's sums then run in another order
// than one block's (within f32 rounding: the GPU's batch-invariance bar). Workspace: kMaxSplits runs of [T,
// n_q, Dv + 2] f32 when T ≤ kRows (group_runs_cap(T) runs over an f16 cache), else none.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/mixer_util.cuh"
#include "core/tensor.h"

namespace keel {

namespace {

using cuda::mixer::kWarp;

constexpr int kThreads = 128;  // 4 warps
constexpr int kWarps = kThreads / kWarp;
constexpr int kRows = 16;                          // query positions per block (ops' kAttentionQueryTile)
constexpr int kRowsPerWarp = kRows / kWarps;       // query rows whose scores one warp computes
constexpr int kKeyTile = 64;                       // keys per softmax tile (ops' kAttentionKeyTile)
constexpr int kSub = 32;                           // keys per shared-memory stage (one per lane)
constexpr int kMaxDv = 512;                        // the op's limit on D and Dv
constexpr int kColsPerThread = kMaxDv / kThreads;  // output columns c = tid + kThreads·k, k < 4
constexpr float kNegInf = -__builtin_huge_valf();
constexpr int64_t kMaxSplits = 32;     // key runs of a split step at most
constexpr int64_t kMinSplitTiles = 4;  // key tiles per run at least (256 keys)

// A cache element widened to f32 (T: float for an f32 cache, __half for an f16 one; widening is exact).
__device__ __forceinline__ float widen(float x) {
  return x;
}
__device__ __forceinline__ float widen(__half x) {
  return __half2float(x);
}
// Four consecutive cache elements at p (aligned to four elements), widened.
__device__ __forceinline__ float4 widen4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float4 widen4(const __half* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}

// Dynamic shared memory (floats): the tile's scores, then probabilities, transposed [kKeyTile, kRows] (first:
// 16-byte aligned, a key's kRows probabilities are read as float4s), the Q tile [kRows, D], a K or V stage
// [kSub, ld] with ld = max(D, Dv) + 1 (odd: lanes reading different keys hit different banks), and the rows'
// m, l and α [kRows] each.
int64_t stage_ld(const AttentionArgs& a) {
  return (a.D > a.Dv ? a.D : a.Dv) + 1;
}
int64_t shared_bytes(const AttentionArgs& a) {
  return 4 * (kKeyTile * kRows + kRows * a.D + kSub * stage_ld(a) + 3 * kRows);
}

// Grid: ⌈T / kRows⌉ · n_q blocks (the heads of one tile consecutive: they share KV rows in L2) × S key runs
// of `span` keys (a multiple of kKeyTile). S = 1 (part null): o normalized into a.out. S > 1: run s writes
// part[s][t][h] = (o unnormalized [Dv], m, l) for combine_kernel.
template <class T>
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const AttentionArgs a, const int64_t ld, const int64_t span, float* part) {
  cuda::pdl_begin();
  extern __shared__ float4 smem_f4[];  // (declared as float4: P is read as float4s)
  float* smem = reinterpret_cast<float*>(smem_f4);
  const int64_t D = a.D, Dv = a.Dv;
  const int64_t h = blockIdx.x % a.n_q, i0 = blockIdx.x / a.n_q * kRows;
  const int rows = static_cast<int>(a.T - i0 < kRows ? a.T - i0 : kRows);
  const int64_t hk = h / (a.n_q / a.n_kv);
  const T* K = static_cast<const T*>(a.k) + hk * a.k_sh;  // key j at K + j·k_st, [D]
  const T* V = static_cast<const T*>(a.v) + hk * a.v_sh;  // value j at V + j·v_st, [Dv]
  float* P = smem;                   // [kKeyTile, kRows]: P[j * kRows + r], row r's score of key k0 + j
  float* Qs = P + kKeyTile * kRows;  // [kRows, D]: q[i0 + r, h] (zeros past T)
  float* KV = Qs + kRows * D;  // [kSub, ld]: keys or values kb … kb + kSub − 1 (zeros past the tile)
  float* m = KV + kSub * ld;   // [kRows] running max
  float* l = m + kRows;        // [kRows] running sum
  float* alpha = l + kRows;    // [kRows] this tile's rescale of o
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  for (int64_t i = tid; i < kRows * D; i += kThreads) {
    const int64_t r = i / D, d = i % D;
    Qs[i] = r < rows ? a.q[(i0 + r) * a.q_st + h * a.q_sh + d] : 0.0f;
  }
  if (tid < kRows) {
    m[tid] = kNegInf;
    l[tid] = 0;
  }
  float acc[kColsPerThread][kRows];  // o[i0 + r, h, tid + kThreads·k], unnormalized
#pragma unroll
  for (int k = 0; k < kColsPerThread; ++k)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[k][r] = 0;
  const int64_t first = a.offset + i0;  // absolute position of row 0
  const int64_t run = static_cast<int64_t>(blockIdx.y) * span;
  // the last row sees keys [0, first + rows); this block takes [run, keys_end) of them
  const int64_t keys_end = first + rows < run + span ? first + rows : run + span;
  for (int64_t k0 = run; k0 < keys_end; k0 += kKeyTile) {
    const int64_t k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    // Scores s[r][j] = scale · q_r · k_j, −inf where key j is past row r's position (or the tile).
    for (int half = 0; half < kKeyTile / kSub; ++half) {
      const int64_t kb = k0 + half * kSub;
      __syncthreads();  // the stage and P are free (the previous tile's values and probabilities are used)
      for (int64_t i = tid; i < kSub * D; i += kThreads) {
        const int64_t j = i / D, d = i % D;
        KV[j * ld + d] = kb + j < k1 ? widen(K[(kb + j) * a.k_st + d]) : 0.0f;
      }
      __syncthreads();
      // Lane: key kb + lane; warp: rows warp + kWarps·k (each key element read once for them). Rows past T
      // are skipped (uniform over the warp: decode computes one row, not kRows).
      const int64_t key = kb + lane;
      const float* kr = KV + lane * ld;
      float dot[kRowsPerWarp] = {};
      for (int64_t d = 0; d < D; ++d) {
        const float kd = kr[d];
#pragma unroll
        for (int k = 0; k < kRowsPerWarp; ++k)
          if (warp + kWarps * k < rows) dot[k] += Qs[(warp + kWarps * k) * D + d] * kd;
      }
#pragma unroll
      for (int k = 0; k < kRowsPerWarp; ++k) {
        const int r = warp + kWarps * k;
        const bool seen = r < rows && key < k1 && key <= first + r;
        P[(half * kSub + lane) * kRows + r] = seen ? dot[k] * a.scale : kNegInf;
      }
    }
    __syncthreads();
    // The online softmax, one warp per row (lane: keys lane and lane + kSub of the tile).
    for (int r = warp; r < kRows; r += kWarps) {
      float* p_lo = P + lane * kRows + r;           // key k0 + lane
      float* p_hi = P + (lane + kSub) * kRows + r;  // key k0 + kSub + lane
      const float s0 = *p_lo, s1 = *p_hi;
      const float tile_max = cuda::mixer::warp_max(fmaxf(s0, s1));
      float al = 1, p0 = 0, p1 = 0, m_new = m[r];
      if (tile_max != kNegInf) {  // the row sees a key of this tile (every row < rows does in tile 0)
        m_new = fmaxf(m[r], tile_max);
        al = expf(m[r] - m_new);  // 0 on the first tile (m = −inf)
        p0 = expf(s0 - m_new);    // 0 for a masked key
        p1 = expf(s1 - m_new);
      }
      const float sum = cuda::mixer::warp_sum(p0 + p1);
      *p_lo = p0;
      *p_hi = p1;
      __syncwarp();
      if (lane == 0) {
        l[r] = l[r] * al + sum;
        m[r] = m_new;
        alpha[r] = al;
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float al = alpha[r];
#pragma unroll
      for (int k = 0; k < kColsPerThread; ++k) acc[k][r] *= al;
    }
    // o_r += Σ_j p[r][j] · v_j, the values staged like the keys.
    for (int half = 0; half < kKeyTile / kSub; ++half) {
      const int64_t kb = k0 + half * kSub;
      __syncthreads();  // the stage is free (the keys' dot products are done)
      for (int64_t i = tid; i < kSub * Dv; i += kThreads) {
        const int64_t j = i / Dv, c = i % Dv;
        KV[j * ld + c] = kb + j < k1 ? widen(V[(kb + j) * a.v_st + c]) : 0.0f;
      }
      __syncthreads();
      for (int j = 0; j < kSub; ++j) {
        const float* vj = KV + j * ld;
        const float4* pj = reinterpret_cast<const float4*>(P + (half * kSub + j) * kRows);
        float p[kRows];
#pragma unroll
        for (int q = 0; q < kRows / 4; ++q) {
          const float4 p4 = pj[q];
          p[4 * q] = p4.x, p[4 * q + 1] = p4.y, p[4 * q + 2] = p4.z, p[4 * q + 3] = p4.w;
        }
#pragma unroll
        for (int k = 0; k < kColsPerThread; ++k) {
          const int64_t c = tid + kThreads * k;
          if (c < Dv) {
            const float v = vj[c];
#pragma unroll
            for (int r = 0; r < kRows; ++r) acc[k][r] += p[r] * v;
          }
        }
      }
    }
  }
  // l was last written before a barrier of the loop (which runs at least once: every run holds a key).
  if (part != nullptr) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      float* o = part + ((static_cast<int64_t>(blockIdx.y) * a.T + i0 + r) * a.n_q + h) * (Dv + 2);
#pragma unroll
      for (int k = 0; k < kColsPerThread; ++k) {
        const int64_t c = tid + kThreads * k;
        if (c < Dv) o[c] = acc[k][r];
      }
      if (tid == 0) o[Dv] = m[r], o[Dv + 1] = l[r];
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {  // unrolled over kRows: acc stays in registers
    if (r >= rows) break;
    const float inv = 1.0f / l[r];
    float* o = a.out + (i0 + r) * a.o_st + h * a.o_sh;
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k) {
      const int64_t c = tid + kThreads * k;
      if (c < Dv) o[c] = acc[k][r] * inv;
    }
  }
}

// ---- prefill on the tensor cores -------------------------------------------------------------------------
// Steps that take one key run (every step but a split decode), head_dim ≤ kMmaMaxD: the tile kernel's math
// (the same 64-key tiles at absolute boundaries, the same online-softmax step per tile) with both products
// on the tensor cores (mma.sync m16n8k16, f32 accumulation). Reference: attention_kernel above and
// ops/reference. Every f32 operand (q, k, v and the probabilities p) is carried by three bf16 parts (hi +
// mid + lo, device_util.cuh) and each product is the sum of the six part products of significance ≥ 2^-16
// (hi·hi, hi·mid, mid·hi, hi·lo, mid·mid, lo·hi; the three left out are below 2^-24 of it), 16 terms at a
// time on the tensor cores, those sums added in f32: the f32 kernel's products at six times the
// tensor-core work. One block per (64 query positions, query head, slab
// of ≤ 128 value columns): four warps, 16 rows each, scores and probabilities in the warps' registers (the
// C fragment of q·kᵀ is the A fragment of p·v), Q's parts in shared memory for the whole key loop, K and V
// staged in halves of kSub keys as parts. A row's result depends on its own q and keys only (its tiles are
// those at or before its position plus, in a warp whose rows straddle a tile boundary, tiles it sees
// nothing of, which leave m, l and o as they are): lone rows, chunks and one shot give the same bits.
// Value heads wider than a slab recompute the scores per slab (Dv 256: 1.5× one block's products).
constexpr int kMmaRows = 64;   // query positions per block: kWarps warps × 16
constexpr int kMmaSlab = 128;  // value columns per block at most (grid z: ⌈Dv / kMmaSlab⌉)
constexpr int kMmaMaxD = 256;  // head_dim of the tensor-core path at most (the tile kernel takes the rest)
constexpr int kParts = 3;      // bf16 parts per f32 operand
constexpr int kSlabFrags = kMmaSlab / 8;  // C fragments (16 rows × 8 columns) of a warp's output slab

// Shared rows in bf16: D rounded up to 16 (zeros past D: exact zero products) and the slab's columns rounded
// up to 16, each row 8 longer so ldmatrix's eight 16-byte rows fall in distinct banks.
struct MmaShape {
  int Dp, ldq, ldkv;
};
MmaShape mma_shape(const AttentionArgs& a) {
  const int Dp = static_cast<int>((a.D + 15) / 16 * 16);
  const int Wp = static_cast<int>((std::min<int64_t>(a.Dv, kMmaSlab) + 15) / 16 * 16);
  return {Dp, Dp + 8, std::max(Dp, Wp) + 8};
}
// Q's parts [kParts][kMmaRows][ldq], then one K or V stage's parts [kParts][kSub][ldkv].
int64_t mma_shared_bytes(const MmaShape& s) {
  return 2 * kParts * (int64_t{kMmaRows} * s.ldq + int64_t{kSub} * s.ldkv);
}

// Elements (x0, x1) as the pair at [part][e] of `n`-element part arrays `dst` (e even).
__device__ __forceinline__ void store_parts(__nv_bfloat16* dst, int64_t n, int64_t e, float x0, float x1) {
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
    const __nv_bfloat16 h0 = cuda::next_bf16_part(x0), h1 = cuda::next_bf16_part(x1);
    *reinterpret_cast<uint32_t*>(dst + p * n + e) = cuda::pack_bf16(h0, h1);
  }
}

// f(a, b) for the part pairs of the six products kept, smallest first: the tensor cores truncate each sum
// to the accumulator's precision (they do not round), so the small terms are summed before the large one
// lands, and each 16-term step starts from zero and is added to the running f32 sum (rounded) by the caller.
template <class F>
__device__ __forceinline__ void six_products(F f) {
  f(2, 0), f(1, 1), f(0, 2), f(1, 0), f(0, 1), f(0, 0);
}

__global__ void __launch_bounds__(kThreads) mma_attention_kernel(const AttentionArgs a, const MmaShape sh) {
  cuda::pdl_begin();
  extern __shared__ uint4 smem_u4[];
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem_u4);  // [kParts][kMmaRows][ldq]
  __nv_bfloat16* KV = Qs + kParts * kMmaRows * sh.ldq;            // [kParts][kSub][ldkv]
  const int64_t q_part = int64_t{kMmaRows} * sh.ldq, kv_part = int64_t{kSub} * sh.ldkv;
  const int64_t h = blockIdx.x % a.n_q, i0 = blockIdx.x / a.n_q * kMmaRows;
  const int64_t c0 = static_cast<int64_t>(blockIdx.z) * kMmaSlab;  // the slab's first value column
  const int W = static_cast<int>(a.Dv - c0 < kMmaSlab ? a.Dv - c0 : kMmaSlab), Wp = (W + 15) / 16 * 16;
  const int rows = static_cast<int>(a.T - i0 < kMmaRows ? a.T - i0 : kMmaRows);
  const int64_t hk = h / (a.n_q / a.n_kv);
  const float* K = static_cast<const float*>(a.k) + hk * a.k_sh;       // key j at K + j·k_st, [D]
  const float* V = static_cast<const float*>(a.v) + hk * a.v_sh + c0;  // value j's slab at V + j·v_st
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, i = lane % 4;
  const int Dp = sh.Dp, half_d = Dp / 2;
  for (int64_t e = tid; e < int64_t{kMmaRows} * half_d; e += kThreads) {
    const int r = static_cast<int>(e / half_d), d = static_cast<int>(e % half_d) * 2;
    const float* q = a.q + (i0 + r) * a.q_st + h * a.q_sh;
    const bool live = r < rows;
    store_parts(Qs, q_part, int64_t{r} * sh.ldq + d, live && d < a.D ? q[d] : 0.0f,
                live && d + 1 < a.D ? q[d + 1] : 0.0f);
  }
  const int w0 = warp * 16;  // the warp's first row in the block
  const int64_t first = a.offset + i0;
  // the warp's last live row's position (the warp computes tiles up to it), and the block's
  const int64_t warp_last = first + (rows < w0 + 16 ? rows : w0 + 16) - 1, keys_end = first + rows;
  const bool warp_live = w0 < rows;
  float o[kSlabFrags][4] = {};                     // o[i0 + w0 + g (+8), h, c0 + 8n + 2i (+1)], unnormalized
  float m[2] = {kNegInf, kNegInf}, l[2] = {0, 0};  // rows w0 + g and w0 + g + 8
  // ldmatrix row addresses of this lane: A (and non-transposed B) fragments
  const int a_row = (lane % 8) + 8 * ((lane / 8) % 2), a_col = 8 * (lane / 16);
  const int b_row = (lane % 8) + 8 * (lane / 16), b_col = 8 * ((lane / 8) % 2);
  for (int64_t k0 = 0; k0 < keys_end; k0 += kKeyTile) {
    const int64_t k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    const bool computes = warp_live && k0 <= warp_last;  // uniform over the warp
    float s[kKeyTile / 8][4] = {};                       // scores: fragment f holds keys k0 + 8f + 2i (+1)
    for (int half = 0; half < kKeyTile / kSub; ++half) {
      const int64_t kb = k0 + half * kSub;
      __syncthreads();  // the stage is free
      for (int64_t e = tid; e < int64_t{kSub} * half_d; e += kThreads) {
        const int j = static_cast<int>(e / half_d), d = static_cast<int>(e % half_d) * 2;
        const float* kr = K + (kb + j) * a.k_st;
        const bool live = kb + j < k1;
        store_parts(KV, kv_part, int64_t{j} * sh.ldkv + d, live && d < a.D ? kr[d] : 0.0f,
                    live && d + 1 < a.D ? kr[d + 1] : 0.0f);
      }
      __syncthreads();
      if (!computes) continue;
      for (int kk = 0; kk < Dp; kk += 16) {
        uint32_t qa[kParts][4];
#pragma unroll
        for (int p = 0; p < kParts; ++p)
          cuda::ldmatrix_x4<false>(qa[p], Qs + p * q_part + (w0 + a_row) * sh.ldq + kk + a_col);
#pragma unroll
        for (int f = 0; f < kSub / 8; f += 2) {  // keys kb + 8f … + 15: fragments f, f + 1
          uint32_t kf[kParts][4];                // (f: b0, b1), (f + 1: b0, b1)
#pragma unroll
          for (int p = 0; p < kParts; ++p)
            cuda::ldmatrix_x4<false>(kf[p], KV + p * kv_part + (8 * f + b_row) * sh.ldkv + kk + b_col);
          float t0[4] = {}, t1[4] = {};  // this k step's 16 terms, added to the scores in f32
          six_products([&](int pa, int pb) {
            cuda::mma_bf16(t0, qa[pa], kf[pb][0], kf[pb][1]);
            cuda::mma_bf16(t1, qa[pa], kf[pb][2], kf[pb][3]);
          });
          float(&s0)[4] = s[half * (kSub / 8) + f];
          float(&s1)[4] = s[half * (kSub / 8) + f + 1];
#pragma unroll
          for (int c = 0; c < 4; ++c) s0[c] += t0[c], s1[c] += t1[c];
        }
      }
    }
    // The online softmax of rows w0 + g (c = 0, 1) and w0 + g + 8 (c = 2, 3): a quad's four lanes hold a
    // row's 64 scores.
    float al[2] = {1, 1};
    if (computes) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = w0 + g + 8 * hr;
        float mx = kNegInf;
#pragma unroll
        for (int f = 0; f < kKeyTile / 8; ++f)
#pragma unroll
          for (int c = 2 * hr; c < 2 * hr + 2; ++c) {
            const int64_t key = k0 + 8 * f + 2 * i + (c & 1);
            const bool seen = r < rows && key < k1 && key <= first + r;
            s[f][c] = seen ? s[f][c] * a.scale : kNegInf;
            mx = fmaxf(mx, s[f][c]);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float sum = 0;
        if (mx != kNegInf) {  // the row sees a key of this tile
          const float m_new = fmaxf(m[hr], mx);
          al[hr] = expf(m[hr] - m_new);  // 0 on the row's first tile (m = −inf)
#pragma unroll
          for (int f = 0; f < kKeyTile / 8; ++f)
#pragma unroll
            for (int c = 2 * hr; c < 2 * hr + 2; ++c) {
              s[f][c] = expf(s[f][c] - m_new);  // 0 for a masked key
              sum += s[f][c];
            }
          m[hr] = m_new;
        } else {
#pragma unroll
          for (int f = 0; f < kKeyTile / 8; ++f) s[f][2 * hr] = s[f][2 * hr + 1] = 0;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        l[hr] = l[hr] * al[hr] + sum;
      }
#pragma unroll
      for (int n = 0; n < kSlabFrags; ++n)
        o[n][0] *= al[0], o[n][1] *= al[0], o[n][2] *= al[1], o[n][3] *= al[1];
    }
    // o += p · v, the values staged like the keys (columns c0 … c0 + Wp of the slab).
    for (int half = 0; half < kKeyTile / kSub; ++half) {
      const int64_t kb = k0 + half * kSub;
      const int half_w = Wp / 2;
      __syncthreads();  // the stage is free (the keys' products are done)
      for (int64_t e = tid; e < int64_t{kSub} * half_w; e += kThreads) {
        const int j = static_cast<int>(e / half_w), c = static_cast<int>(e % half_w) * 2;
        const float* vr = V + (kb + j) * a.v_st;
        const bool live = kb + j < k1;
        store_parts(KV, kv_part, int64_t{j} * sh.ldkv + c, live && c < W ? vr[c] : 0.0f,
                    live && c + 1 < W ? vr[c + 1] : 0.0f);
      }
      __syncthreads();
      if (!computes) continue;
#pragma unroll
      for (int ks = 0; ks < kSub / 16; ++ks) {     // keys kb + 16·ks … + 15
        const int f = half * (kSub / 8) + 2 * ks;  // their score fragments f, f + 1
        uint32_t pa[kParts][4];
        {
          float x[4][2] = {
              {s[f][0], s[f][1]}, {s[f][2], s[f][3]}, {s[f + 1][0], s[f + 1][1]}, {s[f + 1][2], s[f + 1][3]}};
#pragma unroll
          for (int p = 0; p < kParts; ++p)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const __nv_bfloat16 lo = cuda::next_bf16_part(x[q][0]), hi = cuda::next_bf16_part(x[q][1]);
              pa[p][q] = cuda::pack_bf16(lo, hi);
            }
        }
#pragma unroll
        for (int n = 0; n < kSlabFrags; n += 2) {  // columns 8n … 8n + 15
          if (8 * n >= Wp) break;
          uint32_t vf[kParts][4];  // (n: b0, b1), (n + 1: b0, b1)
#pragma unroll
          for (int p = 0; p < kParts; ++p)
            cuda::ldmatrix_x4<true>(vf[p], KV + p * kv_part + (16 * ks + a_row) * sh.ldkv + 8 * n + a_col);
          float t0[4] = {}, t1[4] = {};  // these 16 keys' terms, added to o in f32
          six_products([&](int pp, int pv) {
            cuda::mma_bf16(t0, pa[pp], vf[pv][0], vf[pv][1]);
            cuda::mma_bf16(t1, pa[pp], vf[pv][2], vf[pv][3]);
          });
#pragma unroll
          for (int c = 0; c < 4; ++c) o[n][c] += t0[c], o[n + 1][c] += t1[c];
        }
      }
    }
  }
  if (!warp_live) return;
  const float inv[2] = {1.0f / l[0], 1.0f / l[1]};
#pragma unroll
  for (int n = 0; n < kSlabFrags; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int r = w0 + g + (c >= 2 ? 8 : 0), col = 8 * n + 2 * i + (c & 1);
      if (r < rows && col < W) a.out[(i0 + r) * a.o_st + h * a.o_sh + c0 + col] = o[n][c] * inv[c >= 2];
    }
}

// ---- prefill on the tensor cores over an f16 cache (--cache-type f16) -------------------------------------
// mma_attention_kernel's tiles, order and online-softmax steps over a cache stored in f16. k and v are exact
// in one f16 part, so q and p take two (hi + lo: the rounding of x, then of what it leaves — x's leading 22
// bits; |q| < 65504, the f16 cache's own range) and each product two part products (lo·k, then hi·k, summed
// on the tensor cores from zero, that sum added to the f32 sums) instead of six. p is carried as p·2^14
// (a power of two: exact), so its lo part stays an f16 normal for p down to ~4e-9, and o is divided by the
// same power at the end. A whole 64-key tile of K and of the slab's V is copied into shared memory as stored
// (cp.async, 16 bytes a copy; element by element where a row is not 16-byte aligned) one tile ahead of the
// products, two stages. The query tiles run last first (under the causal mask the last is the longest). A
// row's result depends on its own q and keys only, as mma_attention_kernel's: lone rows, chunks and one shot
// give the same bits. Reference: attention_kernel<__half> (the f32 math over the same widened cache) and
// ops/reference.
constexpr float kPScale = 16384.0f;  // 2^14: p·2^14 ≤ 16384 < 65504, an f16 normal for p ≥ 2^-28

struct MmaF16Shape {
  int Dp, ldq, ldk, ldv;  // D rounded up to 16; Q, K and V rows in shared memory (each 8 past its width)
  bool async;             // D and Dv multiples of 8 and every K and V row 16-byte aligned: cp.async
};
MmaF16Shape mma_f16_shape(const AttentionArgs& a) {
  const int Dp = static_cast<int>((a.D + 15) / 16 * 16);
  const int Wp = static_cast<int>((std::min<int64_t>(a.Dv, kMmaSlab) + 15) / 16 * 16);
  const auto al = [](const void* p, int64_t st, int64_t sh) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && st % 8 == 0 && sh % 8 == 0;
  };
  const bool async = a.D % 8 == 0 && a.Dv % 8 == 0 && al(a.k, a.k_st, a.k_sh) && al(a.v, a.v_st, a.v_sh);
  return {Dp, Dp + 8, Dp + 8, Wp + 8, async};
}
// Q's two parts [2][kMmaRows][ldq], then two stages of K [kKeyTile][ldk] and V [kKeyTile][ldv], f16.
int64_t mma_f16_shared_bytes(const MmaF16Shape& s) {
  return 2 * (2 * int64_t{kMmaRows} * s.ldq + 2 * int64_t{kKeyTile} * (s.ldk + s.ldv));
}

// Rows k0 … k0 + kKeyTile − 1 of `src` (row j at src + j·st, `cols` values) into dst [kKeyTile][ld],
// columns [0, colsp): zeros past cols and for rows at or past k1 (masked keys and padding multiply as 0).
__device__ __forceinline__ void load_f16_tile(const __half* src, int64_t st, int64_t k0, int64_t k1, int cols,
                                              int colsp, __half* dst, int ld, bool async) {
  if (async) {
    const int chunks = colsp / 8;
    for (int e = threadIdx.x; e < kKeyTile * chunks; e += kThreads) {
      const int j = e / chunks, c = e % chunks * 8;
      const bool live = k0 + j < k1 && c < cols;
      cuda::cp_async_16(dst + j * ld + c, live ? src + (k0 + j) * st + c : src, live ? 16 : 0);
    }
  } else {
    for (int e = threadIdx.x; e < kKeyTile * colsp; e += kThreads) {
      const int j = e / colsp, c = e % colsp;
      dst[j * ld + c] = k0 + j < k1 && c < cols ? src[(k0 + j) * st + c] : __float2half_rn(0.0f);
    }
  }
}

// (hi, lo) f16 parts of x.
__device__ __forceinline__ void f16_parts(float x, __half& hi, __half& lo) {
  hi = __float2half_rn(x);
  lo = __float2half_rn(x - __half2float(hi));
}

__global__ void __launch_bounds__(kThreads)
    mma_attention_f16_kernel(const AttentionArgs a, const MmaF16Shape sh) {
  cuda::pdl_begin();
  extern __shared__ uint4 smem_u4[];
  __half* Qs = reinterpret_cast<__half*>(smem_u4);  // [2][kMmaRows][ldq]: hi, lo
  __half* stages = Qs + 2 * kMmaRows * sh.ldq;      // [2]{K [kKeyTile][ldk], V [kKeyTile][ldv]}
  const int64_t q_part = int64_t{kMmaRows} * sh.ldq, stage = int64_t{kKeyTile} * (sh.ldk + sh.ldv);
  const int64_t q_tiles = (a.T + kMmaRows - 1) / kMmaRows;
  const int64_t h = blockIdx.x % a.n_q, i0 = (q_tiles - 1 - blockIdx.x / a.n_q) * kMmaRows;
  const int64_t c0 = static_cast<int64_t>(blockIdx.z) * kMmaSlab;  // the slab's first value column
  const int W = static_cast<int>(a.Dv - c0 < kMmaSlab ? a.Dv - c0 : kMmaSlab), Wp = (W + 15) / 16 * 16;
  const int rows = static_cast<int>(a.T - i0 < kMmaRows ? a.T - i0 : kMmaRows);
  const int64_t hk = h / (a.n_q / a.n_kv);
  const __half* K = static_cast<const __half*>(a.k) + hk * a.k_sh;       // key j at K + j·k_st, [D]
  const __half* V = static_cast<const __half*>(a.v) + hk * a.v_sh + c0;  // value j's slab at V + j·v_st
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, i = lane % 4;
  const int Dp = sh.Dp;
  for (int e = tid; e < kMmaRows * Dp; e += kThreads) {
    const int r = e / Dp, d = e % Dp;
    const float x = r < rows && d < a.D ? a.q[(i0 + r) * a.q_st + h * a.q_sh + d] : 0.0f;
    f16_parts(x, Qs[r * sh.ldq + d], Qs[q_part + r * sh.ldq + d]);
  }
  const int w0 = warp * 16;  // the warp's first row in the block
  const int64_t first = a.offset + i0;
  // the warp's last live row's position (the warp computes tiles up to it), and the block's
  const int64_t warp_last = first + (rows < w0 + 16 ? rows : w0 + 16) - 1, keys_end = first + rows;
  const bool warp_live = w0 < rows;
  float o[kSlabFrags][4] = {};  // 2^14 · o[i0 + w0 + g (+8), h, c0 + 8n + 2i (+1)], unnormalized
  float m[2] = {kNegInf, kNegInf}, l[2] = {0, 0};  // rows w0 + g and w0 + g + 8
  const int a_row = (lane % 8) + 8 * ((lane / 8) % 2), a_col = 8 * (lane / 16);
  const int b_row = (lane % 8) + 8 * (lane / 16), b_col = 8 * ((lane / 8) % 2);
  const int64_t tiles = (keys_end + kKeyTile - 1) / kKeyTile;
  const auto copy_tile = [&](int64_t t) {  // tile t into stage t % 2, one cp.async group
    __half* ks = stages + (t & 1) * stage;
    const int64_t k0 = t * kKeyTile, k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    load_f16_tile(K, a.k_st, k0, k1, static_cast<int>(a.D), Dp, ks, sh.ldk, sh.async);
    load_f16_tile(V, a.v_st, k0, k1, W, Wp, ks + kKeyTile * sh.ldk, sh.ldv, sh.async);
    cuda::cp_async_commit();
  };
  copy_tile(0);
  for (int64_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) {
      copy_tile(t + 1);
      cuda::cp_async_wait<1>();
    } else {
      cuda::cp_async_wait<0>();
    }
    __syncthreads();  // tile t (and Q) in shared memory for every warp
    const __half* Ks = stages + (t & 1) * stage;
    const __half* Vs = Ks + kKeyTile * sh.ldk;
    const int64_t k0 = t * kKeyTile, k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    if (warp_live && k0 <= warp_last) {  // uniform over the warp
      float s[kKeyTile / 8][4] = {};     // scores: fragment f holds keys k0 + 8f + 2i (+1)
      for (int kk = 0; kk < Dp; kk += 16) {
        uint32_t qa[2][4];
        cuda::ldmatrix_x4<false>(qa[0], Qs + (w0 + a_row) * sh.ldq + kk + a_col);
        cuda::ldmatrix_x4<false>(qa[1], Qs + q_part + (w0 + a_row) * sh.ldq + kk + a_col);
#pragma unroll
        for (int f = 0; f < kKeyTile / 8; f += 2) {  // keys k0 + 8f … + 15: fragments f, f + 1
          uint32_t kf[4];                            // (f: b0, b1), (f + 1: b0, b1)
          cuda::ldmatrix_x4<false>(kf, Ks + (8 * f + b_row) * sh.ldk + kk + b_col);
          float t0[4] = {}, t1[4] = {};  // this k step's 16 terms (lo, then hi), added to the scores in f32
          cuda::mma_f16(t0, qa[1], kf[0], kf[1]);
          cuda::mma_f16(t1, qa[1], kf[2], kf[3]);
          cuda::mma_f16(t0, qa[0], kf[0], kf[1]);
          cuda::mma_f16(t1, qa[0], kf[2], kf[3]);
#pragma unroll
          for (int c = 0; c < 4; ++c) s[f][c] += t0[c], s[f + 1][c] += t1[c];
        }
      }
      // The online softmax of rows w0 + g (c = 0, 1) and w0 + g + 8 (c = 2, 3), as mma_attention_kernel's.
      float al[2] = {1, 1};
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = w0 + g + 8 * hr;
        float mx = kNegInf;
#pragma unroll
        for (int f = 0; f < kKeyTile / 8; ++f)
#pragma unroll
          for (int c = 2 * hr; c < 2 * hr + 2; ++c) {
            const int64_t key = k0 + 8 * f + 2 * i + (c & 1);
            const bool seen = r < rows && key < k1 && key <= first + r;
            s[f][c] = seen ? s[f][c] * a.scale : kNegInf;
            mx = fmaxf(mx, s[f][c]);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float sum = 0;
        if (mx != kNegInf) {  // the row sees a key of this tile
          const float m_new = fmaxf(m[hr], mx);
          al[hr] = expf(m[hr] - m_new);  // 0 on the row's first tile (m = −inf)
#pragma unroll
          for (int f = 0; f < kKeyTile / 8; ++f)
#pragma unroll
            for (int c = 2 * hr; c < 2 * hr + 2; ++c) {
              s[f][c] = expf(s[f][c] - m_new);  // 0 for a masked key
              sum += s[f][c];
            }
          m[hr] = m_new;
        } else {
#pragma unroll
          for (int f = 0; f < kKeyTile / 8; ++f) s[f][2 * hr] = s[f][2 * hr + 1] = 0;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        l[hr] = l[hr] * al[hr] + sum;
      }
#pragma unroll
      for (int n = 0; n < kSlabFrags; ++n)
        o[n][0] *= al[0], o[n][1] *= al[0], o[n][2] *= al[1], o[n][3] *= al[1];
        // o += (p·2^14) · v over the tile's keys, 16 at a time.
#pragma unroll
      for (int ks = 0; ks < kKeyTile / 16; ++ks) {
        const int f = 2 * ks;  // the keys' score fragments f, f + 1
        const float x[4][2] = {
            {s[f][0], s[f][1]}, {s[f][2], s[f][3]}, {s[f + 1][0], s[f + 1][1]}, {s[f + 1][2], s[f + 1][3]}};
        uint32_t pa[2][4];  // hi, lo
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          __half h0, l0, h1, l1;
          f16_parts(x[q][0] * kPScale, h0, l0);
          f16_parts(x[q][1] * kPScale, h1, l1);
          pa[0][q] = cuda::pack_f16(h0, h1);
          pa[1][q] = cuda::pack_f16(l0, l1);
        }
#pragma unroll
        for (int n = 0; n < kSlabFrags; n += 2) {  // columns 8n … 8n + 15
          if (8 * n >= Wp) break;
          uint32_t vf[4];  // (n: b0, b1), (n + 1: b0, b1)
          cuda::ldmatrix_x4<true>(vf, Vs + (16 * ks + a_row) * sh.ldv + 8 * n + a_col);
          float t0[4] = {}, t1[4] = {};  // these 16 keys' terms (lo, then hi), added to o in f32
          cuda::mma_f16(t0, pa[1], vf[0], vf[1]);
          cuda::mma_f16(t1, pa[1], vf[2], vf[3]);
          cuda::mma_f16(t0, pa[0], vf[0], vf[1]);
          cuda::mma_f16(t1, pa[0], vf[2], vf[3]);
#pragma unroll
          for (int c = 0; c < 4; ++c) o[n][c] += t0[c], o[n + 1][c] += t1[c];
        }
      }
    }
    __syncthreads();  // every warp is done with stage t % 2 before tile t + 2 is copied into it
  }
  if (!warp_live) return;
  const float inv[2] = {1.0f / (l[0] * kPScale), 1.0f / (l[1] * kPScale)};
#pragma unroll
  for (int n = 0; n < kSlabFrags; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int r = w0 + g + (c >= 2 ? 8 : 0), col = 8 * n + 2 * i + (c & 1);
      if (r < rows && col < W) a.out[(i0 + r) * a.o_st + h * a.o_sh + c0 + col] = o[n][c] * inv[c >= 2];
    }
}

__global__ void convert_f16_kernel(const float* src, __half* dst, int64_t n) {
  cuda::pdl_begin();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __float2half_rn(src[i]);  // to nearest even, ±inf past 65504, NaN stays NaN (ConvertArgs)
}

// ---- decode: few query rows, a warp per 32 keys ---------------------------------------------------------
// Steps of T ≤ kRows rows whose q, K and V rows are float4-aligned (D, Dv multiples of 4): one block per
// (row t, query head h, key run s) of kThreads; warp w takes the run's keys in chunks of 32, chunk c at
// run start + 32·(w + kWarps·c), lane = key. Per chunk: s_j = scale · q · k_j (the lane reads its key's row
// as float4s, q from shared memory), the chunk's online-softmax step for the warp (m' = max(m, chunk max),
// α = e^{m − m'}, p_j = e^{s_j − m'}, l ← α·l + Σp), o ← α·o + Σ_j p_j·v_j with lane holding columns
// 4·(lane + 32·i) … + 3. The block's four warps merge as the runs do (M = max m_w, weights e^{m_w − M}),
// then write the run's partial (S > 1) or o / l. The tile kernel above wasted 15 of its 16 query rows and
// staged every key through shared memory, for ~55 µs per 64-key tile of a lone block: 387 µs per layer at 1K
// of context on the Nemotron-H shape (ncu, H200). Reference: attention_kernel (the op's tile order; this one
// sums in chunks of 32 keys per warp, within f32 rounding of it) and ops/reference.
constexpr int kMaxCols4 = kMaxDv / 4 / kWarp;  // float4 columns per lane

// A step's key runs: `runs` blocks along grid y, each `span` keys (the last may hold fewer).
struct Split {
  int64_t runs, span;
};

// The device's SM count, asked once per attention call that may split.
int sm_count() {
  int device = 0, sms = 0;
  cuda::check(cudaGetDevice(&device), "attention");
  cuda::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "attention");
  return sms;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const AttentionArgs a, const int64_t span, float* part) {
  cuda::pdl_begin();
  __shared__ float4 q4[kMaxDv / 4];
  __shared__ float wm[kWarps], wl[kWarps];
  __shared__ float4 wo[kWarps][kMaxDv / 4];
  const int64_t t = blockIdx.x / a.n_q, h = blockIdx.x % a.n_q, hk = h / (a.n_q / a.n_kv);
  const int64_t D4 = a.D / 4, Dv4 = a.Dv / 4;
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const float4* qrow = reinterpret_cast<const float4*>(a.q + t * a.q_st + h * a.q_sh);
  for (int64_t i = tid; i < D4; i += kThreads) q4[i] = qrow[i];
  __syncthreads();
  const int64_t keys = a.offset + t + 1;  // row t sees keys [0, offset + t]
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * span;
  const int64_t end = begin + span < keys ? begin + span : keys;
  const T* K = static_cast<const T*>(a.k) + hk * a.k_sh;
  const T* V = static_cast<const T*>(a.v) + hk * a.v_sh;
  float m = kNegInf, l = 0;
  float4 o[kMaxCols4];
#pragma unroll
  for (int i = 0; i < kMaxCols4; ++i) o[i] = make_float4(0, 0, 0, 0);
  for (int64_t c0 = begin + kWarp * warp; c0 < end; c0 += kWarp * kWarps) {
    const int64_t key = c0 + lane;
    const bool live = key < end;
    float s = kNegInf;
    if (live) {
      const T* kr = K + key * a.k_st;
      float dot = 0;
#pragma unroll 8
      for (int64_t d = 0; d < D4; ++d) {  // unrolled: the lane's loads of its key row in flight together
        const float4 k = widen4(kr + 4 * d), q = q4[d];
        dot = fmaf(q.w, k.w, fmaf(q.z, k.z, fmaf(q.y, k.y, fmaf(q.x, k.x, dot))));
      }
      s = dot * a.scale;
    }
    const float m_new = fmaxf(m, cuda::mixer::warp_max(s));  // finite: key c0 is live
    const float al = expf(m - m_new);                        // 0 on the first chunk (m = −inf)
    const float p = live ? expf(s - m_new) : 0.0f;
    l = l * al + cuda::mixer::warp_sum(p);
    m = m_new;
#pragma unroll
    for (int i = 0; i < kMaxCols4; ++i) o[i].x *= al, o[i].y *= al, o[i].z *= al, o[i].w *= al;
    const int64_t n = end - c0 < kWarp ? end - c0 : kWarp;
#pragma unroll 4
    for (int j = 0; j < n; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const T* vr = V + (c0 + j) * a.v_st;
#pragma unroll
      for (int i = 0; i < kMaxCols4; ++i) {
        const int64_t c = lane + kWarp * i;
        if (c < Dv4) {
          const float4 v = widen4(vr + 4 * c);
          o[i].x = fmaf(pj, v.x, o[i].x), o[i].y = fmaf(pj, v.y, o[i].y);
          o[i].z = fmaf(pj, v.z, o[i].z), o[i].w = fmaf(pj, v.w, o[i].w);
        }
      }
    }
  }
  if (lane == 0) wm[warp] = m, wl[warp] = l;
#pragma unroll
  for (int i = 0; i < kMaxCols4; ++i)
    if (lane + kWarp * i < Dv4) wo[warp][lane + kWarp * i] = o[i];
  __syncthreads();
  float M = kNegInf;
  for (int w = 0; w < kWarps; ++w) M = fmaxf(M, wm[w]);
  float L = 0, scale[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    scale[w] = wm[w] == kNegInf ? 0.0f : expf(wm[w] - M);  // a warp without keys (or a run without)
    L += scale[w] * wl[w];
  }
  float* dst = part != nullptr
                   ? part + ((static_cast<int64_t>(blockIdx.y) * a.T + t) * a.n_q + h) * (a.Dv + 2)
                   : a.out + t * a.o_st + h * a.o_sh;
  const float inv = part != nullptr ? 1.0f : 1.0f / L;
  for (int64_t c = tid; c < a.Dv; c += kThreads) {
    float sum = 0;
    for (int w = 0; w < kWarps; ++w) sum += scale[w] * reinterpret_cast<const float*>(wo[w])[c];
    dst[c] = sum * inv;
  }
  if (part != nullptr && tid == 0) dst[a.Dv] = M, dst[a.Dv + 1] = L;
}

// The decode kernel takes the step: T ≤ kRows and every row it reads four elements at a time aligned to
// four elements (16 bytes of q and of an f32 cache, 8 of an f16 one).
bool decode_fits(const AttentionArgs& a) {
  const auto al = [](const void* p, int64_t st, int64_t sh, int64_t bytes) {
    return reinterpret_cast<uintptr_t>(p) % (4 * bytes) == 0 && st % 4 == 0 && sh % 4 == 0;
  };
  const int64_t kv = a.kv_dtype == DType::f16 ? 2 : 4;
  return a.T <= kRows && a.D % 4 == 0 && a.Dv % 4 == 0 && al(a.q, a.q_st, a.q_sh, 4) &&
         al(a.k, a.k_st, a.k_sh, kv) && al(a.v, a.v_st, a.v_sh, kv);
}

// Runs of the decode kernel: enough for eight blocks (32 warps) per SM over the T·n_q (row, head) blocks, at
// most kMaxSplits, each at least kWarps chunks of 32 keys; span a multiple of 32.
Split decode_split_of(const AttentionArgs& a, int sms) {
  const int64_t keys = a.offset + a.T;
  const int64_t per_block = kWarp * kWarps;
  int64_t runs = (8 * int64_t{sms} + a.T * a.n_q - 1) / (a.T * a.n_q);
  runs = std::max<int64_t>(1, std::min({runs, kMaxSplits, (keys + per_block - 1) / per_block}));
  const int64_t span = ((keys + runs - 1) / runs + kWarp - 1) / kWarp * kWarp;
  return {(keys + span - 1) / span, span};
}

// ---- decode over an f16 cache on the tensor cores: a block per KV head's query group --------------------
// Split steps (T ≤ kRows over ≥ 2·kMinSplitTiles key tiles) over an f16 cache with D, Dv ≤ 256 whose K and V
// rows are 16-byte aligned. decode_kernel above is a block per (row, query head): the n_q / n_kv query heads
// of a KV head each read its keys again (16 times on the Nemotron-H shape: ~13 GB a token over its six
// attention layers at 128K of context, where the cache holds 0.8 GB). Here one block takes the G = n_q /
// n_kv heads of one KV head together: the step's T·G rows (t, g) of KV head hk — row r is position t = r / G,
// query head hk·G + r % G — in tiles of kGroupRows, so a 64-key tile of K and V is copied into shared
// memory once (cp.async, two stages: tile t + 1 lands while tile t is multiplied) for all the group's rows.
// Grid: n_kv · ⌈T·G / kGroupRows⌉ blocks × S key runs of `span` keys (a multiple of kKeyTile, at the fixed
// absolute tile boundaries). Per tile, four warps: warp w scores keys k0 + 16w … + 15 for the 16 rows (q·kᵀ
// on the tensor cores, q in two f16 parts as mma_attention_f16_kernel's), the scaled and masked scores go to
// shared memory, eight threads a row take the tile's online-softmax step (m' = max(m, tile max), α = e^{m −
// m'}, p = e^{s − m'}, l ← α·l + Σp), and warp w multiplies p (as p·2^14 in two f16 parts) by the value
// columns w·Dvp/4 … (Dvp = Dv rounded up to 64). S = 1 writes o / l; S > 1 writes each run's (o, m, l) for
// combine_kernel, as the other split kernels do. The sums run in another order than the one-shot kernel's
// (within f32 rounding: the GPU's batch-invariance bar for split steps). Reference: attention_kernel<__half>
// and ops/reference.
constexpr int kGroupRows = 16;                        // rows (t, g) per block: one m16 fragment
constexpr int kGroupMaxD = 256;                       // D and Dv of the kernel at most
constexpr int kGroupFrags = kGroupMaxD / kWarps / 8;  // C fragments (8 value columns) of a warp at most
constexpr int kScoreLd = kKeyTile + 4;                // floats per row of the shared scores (16-byte rows)
constexpr int64_t kMaxGroupRuns = 128;                // key runs at most
constexpr int64_t kMaxRunRows = kMaxSplits * kRows;   // runs × T at most: the workspace's bound (512)

struct GroupShape {
  int Dp, Dvp, ldq, ldk, ldv;  // D rounded up to 16, Dv to 64; Q, K and V rows in shared memory (halves)
};
GroupShape group_shape(const AttentionArgs& a) {
  const int Dp = static_cast<int>((a.D + 15) / 16 * 16), Dvp = static_cast<int>((a.Dv + 63) / 64 * 64);
  return {Dp, Dvp, Dp + 8, Dp + 8, Dvp + 8};
}
// Q's two parts [2][kGroupRows][ldq] and two stages of K [kKeyTile][ldk] and V [kKeyTile][ldv] (f16), then
// the scores [kGroupRows][kScoreLd] and the rows' m, l and α [kGroupRows] (f32).
int64_t group_shared_bytes(const GroupShape& s) {
  return 2 * (2 * int64_t{kGroupRows} * s.ldq + 2 * int64_t{kKeyTile} * (s.ldk + s.ldv)) +
         4 * (int64_t{kGroupRows} * kScoreLd + 3 * kGroupRows);
}

// The grouped kernel takes the step: an f16 cache, D and Dv ≤ kGroupMaxD, multiples of 8, and every K and V
// row 16-byte aligned (cp.async).
bool group_fits(const AttentionArgs& a) {
  const auto al = [](const void* p, int64_t st, int64_t sh) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && st % 8 == 0 && sh % 8 == 0;
  };
  return a.kv_dtype == DType::f16 && a.T <= kRows && a.D <= kGroupMaxD && a.Dv <= kGroupMaxD &&
         a.D % 8 == 0 && a.Dv % 8 == 0 && al(a.k, a.k_st, a.k_sh) && al(a.v, a.v_st, a.v_sh);
}

// Runs of the grouped kernel at most for T rows: kMaxGroupRuns, and runs × T ≤ kMaxRunRows.
int64_t group_runs_cap(int64_t T) {
  return std::min<int64_t>(kMaxGroupRuns, kMaxRunRows / std::max<int64_t>(T, 1));
}

// Runs: enough for two blocks per SM over the n_kv · ⌈T·G / 16⌉ row tiles, at most group_runs_cap(T), at
// least one key tile each; span a multiple of kKeyTile.
Split group_split_of(const AttentionArgs& a, int sms) {
  const int64_t keys = a.offset + a.T, tiles = (keys + kKeyTile - 1) / kKeyTile;
  const int64_t row_tiles = (a.T * (a.n_q / a.n_kv) + kGroupRows - 1) / kGroupRows;
  int64_t runs = (2 * int64_t{sms} + a.n_kv * row_tiles - 1) / (a.n_kv * row_tiles);
  runs = std::max<int64_t>(1, std::min({runs, group_runs_cap(a.T), tiles}));
  const int64_t per = (tiles + runs - 1) / runs;
  return {(tiles + per - 1) / per, per * kKeyTile};
}

__global__ void __launch_bounds__(kThreads)
    group_decode_f16_kernel(const AttentionArgs a, const GroupShape sh, const int64_t span, float* part) {
  cuda::pdl_begin();
  extern __shared__ uint4 smem_u4[];
  __half* Qs = reinterpret_cast<__half*>(smem_u4);  // [2][kGroupRows][ldq]: hi, lo
  __half* stages = Qs + 2 * kGroupRows * sh.ldq;    // [2]{K [kKeyTile][ldk], V [kKeyTile][ldv]}
  const int64_t q_part = int64_t{kGroupRows} * sh.ldq, stage = int64_t{kKeyTile} * (sh.ldk + sh.ldv);
  float* S = reinterpret_cast<float*>(stages + 2 * stage);  // [kGroupRows][kScoreLd]: scores, then p
  float* row_m = S + kGroupRows * kScoreLd;                 // [kGroupRows] each
  float* row_l = row_m + kGroupRows;
  float* row_al = row_l + kGroupRows;
  const int64_t G = a.n_q / a.n_kv, R = a.T * G, row_tiles = (R + kGroupRows - 1) / kGroupRows;
  const int64_t hk = blockIdx.x / row_tiles, r0 = blockIdx.x % row_tiles * kGroupRows;
  const int rows = static_cast<int>(R - r0 < kGroupRows ? R - r0 : kGroupRows);
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp, g = lane / 4, i = lane % 4;
  const int Dp = sh.Dp;
  for (int e = tid; e < kGroupRows * Dp; e += kThreads) {
    const int r = e / Dp, d = e % Dp;
    const int64_t rr = r0 + r;
    const float x = r < rows && d < a.D ? a.q[rr / G * a.q_st + (hk * G + rr % G) * a.q_sh + d] : 0.0f;
    f16_parts(x, Qs[r * sh.ldq + d], Qs[q_part + r * sh.ldq + d]);
  }
  if (tid < kGroupRows) row_m[tid] = kNegInf, row_l[tid] = 0;
  // The run's keys that some row of the block sees: [begin, keys_end).
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * span;
  const int64_t seen_end = a.offset + (r0 + rows - 1) / G + 1;
  const int64_t keys_end = begin + span < seen_end ? begin + span : seen_end;
  const int64_t tiles = keys_end > begin ? (keys_end - begin + kKeyTile - 1) / kKeyTile : 0;
  const __half* K = static_cast<const __half*>(a.k) + hk * a.k_sh;  // key j at K + j·k_st, [D]
  const __half* V = static_cast<const __half*>(a.v) + hk * a.v_sh;  // value j at V + j·v_st, [Dv]
  const int cols = sh.Dvp / kWarps, c_w = warp * cols;              // the warp's value columns
  float o[kGroupFrags][4] = {};  // 2^14 · o[row g (+8)][c_w + 8n + 2i (+1)], unnormalized
  const int a_row = (lane % 8) + 8 * ((lane / 8) % 2), a_col = 8 * (lane / 16);
  const int b_row = (lane % 8) + 8 * (lane / 16), b_col = 8 * ((lane / 8) % 2);
  const auto copy_tile = [&](int64_t t) {  // tile t of the run into stage t % 2, one cp.async group
    __half* ks = stages + (t & 1) * stage;
    const int64_t k0 = begin + t * kKeyTile, k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    load_f16_tile(K, a.k_st, k0, k1, static_cast<int>(a.D), Dp, ks, sh.ldk, true);
    load_f16_tile(V, a.v_st, k0, k1, static_cast<int>(a.Dv), sh.Dvp, ks + kKeyTile * sh.ldk, sh.ldv, true);
    cuda::cp_async_commit();
  };
  if (tiles > 0) copy_tile(0);
  for (int64_t t = 0; t < tiles; ++t) {
    cuda::cp_async_wait<0>();
    __syncthreads();  // tile t (and Q) in shared memory; every warp done with tile t − 1's stage and S
    if (t + 1 < tiles) copy_tile(t + 1);
    const __half* Ks = stages + (t & 1) * stage;
    const __half* Vs = Ks + kKeyTile * sh.ldk;
    const int64_t k0 = begin + t * kKeyTile, k1 = k0 + kKeyTile < keys_end ? k0 + kKeyTile : keys_end;
    {  // scores of keys k0 + 16·warp … + 15: fragments 0 and 1 hold keys + 8f + 2i (+1)
      float s[2][4] = {};
      for (int kk = 0; kk < Dp; kk += 16) {
        uint32_t qa[2][4], kf[4];
        cuda::ldmatrix_x4<false>(qa[0], Qs + a_row * sh.ldq + kk + a_col);
        cuda::ldmatrix_x4<false>(qa[1], Qs + q_part + a_row * sh.ldq + kk + a_col);
        cuda::ldmatrix_x4<false>(kf, Ks + (16 * warp + b_row) * sh.ldk + kk + b_col);
        float t0[4] = {}, t1[4] = {};  // this k step's 16 terms (lo, then hi), added to the scores in f32
        cuda::mma_f16(t0, qa[1], kf[0], kf[1]);
        cuda::mma_f16(t1, qa[1], kf[2], kf[3]);
        cuda::mma_f16(t0, qa[0], kf[0], kf[1]);
        cuda::mma_f16(t1, qa[0], kf[2], kf[3]);
#pragma unroll
        for (int c = 0; c < 4; ++c) s[0][c] += t0[c], s[1][c] += t1[c];
      }
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int r = g + (c >= 2 ? 8 : 0), j = 16 * warp + 8 * f + 2 * i + (c & 1);
          const int64_t key = k0 + j;
          const bool seen = r < rows && key < k1 && key <= a.offset + (r0 + r) / G;
          S[r * kScoreLd + j] = seen ? s[f][c] * a.scale : kNegInf;
        }
    }
    __syncthreads();
    {  // the tile's online-softmax step: eight threads (of one warp) a row, eight keys each
      const int r = tid / 8, j0 = tid % 8 * 8;
      float4* sr = reinterpret_cast<float4*>(S + r * kScoreLd + j0);
      float x[8];
      const float4 x0 = sr[0], x1 = sr[1];
      x[0] = x0.x, x[1] = x0.y, x[2] = x0.z, x[3] = x0.w, x[4] = x1.x, x[5] = x1.y, x[6] = x1.z, x[7] = x1.w;
      const float m_old = row_m[r], l_old = row_l[r];
      float mx = kNegInf;
#pragma unroll
      for (int j = 0; j < 8; ++j) mx = fmaxf(mx, x[j]);
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      const float m_new = fmaxf(m_old, mx);
      const bool any = m_new != kNegInf;               // the row has seen a key (else p = 0, α = 1)
      const float al = any ? expf(m_old - m_new) : 1;  // 0 on the row's first keys (m = −inf)
      float sum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        x[j] = any ? expf(x[j] - m_new) : 0.0f;  // 0 for a masked key
        sum += x[j];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      sum += __shfl_xor_sync(0xffffffffu, sum, 4);
      sr[0] = make_float4(x[0], x[1], x[2], x[3]), sr[1] = make_float4(x[4], x[5], x[6], x[7]);
      __syncwarp();  // the row's eight threads have read m and l
      if (tid % 8 == 0) row_m[r] = m_new, row_l[r] = l_old * al + sum, row_al[r] = al;
    }
    __syncthreads();
    {  // o ← α·o + (p·2^14)·v over the warp's columns, 16 keys at a time
      const float al0 = row_al[g], al1 = row_al[g + 8];
#pragma unroll
      for (int n = 0; n < kGroupFrags; ++n) o[n][0] *= al0, o[n][1] *= al0, o[n][2] *= al1, o[n][3] *= al1;
#pragma unroll
      for (int ks = 0; ks < kKeyTile / 16; ++ks) {
        const float* p0 = S + g * kScoreLd + 16 * ks + 2 * i;  // row g, keys 16ks + 2i (+1), then + 8
        const float* p1 = p0 + 8 * kScoreLd;                   // row g + 8
        const float2 x[4] = {*reinterpret_cast<const float2*>(p0), *reinterpret_cast<const float2*>(p1),
                             *reinterpret_cast<const float2*>(p0 + 8),
                             *reinterpret_cast<const float2*>(p1 + 8)};
        uint32_t pa[2][4];  // hi, lo
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          __half h0, l0, h1, l1;
          f16_parts(x[q].x * kPScale, h0, l0);
          f16_parts(x[q].y * kPScale, h1, l1);
          pa[0][q] = cuda::pack_f16(h0, h1);
          pa[1][q] = cuda::pack_f16(l0, l1);
        }
#pragma unroll
        for (int n = 0; n < kGroupFrags; n += 2) {  // the warp's columns 8n … 8n + 15
          if (8 * n >= cols) break;
          uint32_t vf[4];  // (n: b0, b1), (n + 1: b0, b1)
          cuda::ldmatrix_x4<true>(vf, Vs + (16 * ks + a_row) * sh.ldv + c_w + 8 * n + a_col);
          float t0[4] = {}, t1[4] = {};  // these 16 keys' terms (lo, then hi), added to o in f32
          cuda::mma_f16(t0, pa[1], vf[0], vf[1]);
          cuda::mma_f16(t1, pa[1], vf[2], vf[3]);
          cuda::mma_f16(t0, pa[0], vf[0], vf[1]);
          cuda::mma_f16(t1, pa[0], vf[2], vf[3]);
#pragma unroll
          for (int c = 0; c < 4; ++c) o[n][c] += t0[c], o[n + 1][c] += t1[c];
        }
      }
    }
  }
  __syncthreads();  // the rows' last m and l (or their initial values, for a run past every row's keys)
#pragma unroll
  for (int n = 0; n < kGroupFrags; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int r = g + (c >= 2 ? 8 : 0), col = c_w + 8 * n + 2 * i + (c & 1);
      if (r >= rows || col >= a.Dv || 8 * n >= cols) continue;
      const int64_t rr = r0 + r, t = rr / G, h = hk * G + rr % G;
      if (part != nullptr)
        part[((static_cast<int64_t>(blockIdx.y) * a.T + t) * a.n_q + h) * (a.Dv + 2) + col] =
            o[n][c] / kPScale;
      else
        a.out[t * a.o_st + h * a.o_sh + col] = o[n][c] / (row_l[r] * kPScale);
    }
  if (part != nullptr && tid < rows) {
    const int64_t rr = r0 + tid, t = rr / G, h = hk * G + rr % G;
    float* dst = part + ((static_cast<int64_t>(blockIdx.y) * a.T + t) * a.n_q + h) * (a.Dv + 2);
    dst[a.Dv] = row_m[tid], dst[a.Dv + 1] = row_l[tid];
  }
}

// One block per (row t, head h): the S runs' partials merged in run order into out[t, h].
__global__ void __launch_bounds__(kThreads)
    combine_kernel(const AttentionArgs a, const int64_t S, const float* part) {
  cuda::pdl_begin();
  const int64_t t = blockIdx.x / a.n_q, h = blockIdx.x % a.n_q, Dv = a.Dv, stride = a.T * a.n_q * (Dv + 2);
  const float* p0 = part + (t * a.n_q + h) * (Dv + 2);
  float M = kNegInf;
  for (int64_t s = 0; s < S; ++s) M = fmaxf(M, p0[s * stride + Dv]);
  float L = 0;
  for (int64_t s = 0; s < S; ++s) {
    const float m = p0[s * stride + Dv];
    if (m != kNegInf) L += expf(m - M) * p0[s * stride + Dv + 1];
  }
  const float inv = 1.0f / L;
  float* o = a.out + t * a.o_st + h * a.o_sh;
  for (int64_t c = threadIdx.x; c < Dv; c += kThreads) {
    float sum = 0;
    for (int64_t s = 0; s < S; ++s) {
      const float m = p0[s * stride + Dv];
      if (m != kNegInf) sum += expf(m - M) * p0[s * stride + c];
    }
    o[c] = sum * inv;
  }
}

// Key runs of this step: 1 (one block per query tile and head) unless T ≤ kRows and the n_q blocks would
// leave the device's SMs idle; then enough runs for two blocks per SM, each at least kMinSplitTiles tiles.
Split split_of(const AttentionArgs& a, int sms) {
  const int64_t keys = a.offset + a.T, tiles = (keys + kKeyTile - 1) / kKeyTile;
  if (a.T > kRows || tiles < 2 * kMinSplitTiles) return {1, tiles * kKeyTile};
  int64_t runs = (2 * int64_t{sms} + a.n_q - 1) / a.n_q;
  runs = std::min({runs, kMaxSplits, tiles / kMinSplitTiles});
  if (runs <= 1) return {1, tiles * kKeyTile};
  const int64_t per = (tiles + runs - 1) / runs;  // tiles per run; the last run may hold fewer
  return {(tiles + per - 1) / per, per * kKeyTile};
}

}  // namespace

// Split steps (T ≤ kRows): runs of partials [T, n_q, Dv + 2] f32, whatever the cache length — kMaxSplits
// runs, or group_runs_cap(T) over an f16 cache (the grouped kernel's; at most kMaxRunRows · n_q · (Dv + 2)).
int64_t CudaBackend::attention_workspace(const AttentionArgs& a) const {
  if (a.T > kRows) return 0;
  const int64_t runs = a.kv_dtype == DType::f16 ? group_runs_cap(a.T) : kMaxSplits;
  return runs * a.T * a.n_q * (a.Dv + 2) * 4;
}

void CudaBackend::attention(const AttentionArgs& a) {
  enter();
  if (a.T == 0 || a.n_q == 0) return;
  if (a.key_tile != kKeyTile || a.query_tile != kRows)
    throw_error(ErrorCode::unsupported,
                "attention: key tile {} / query tile {} (the CUDA kernel has {} / {})", a.key_tile,
                a.query_tile, kKeyTile, kRows);
  if (a.kv_dtype != DType::f32 && a.kv_dtype != DType::f16)
    throw_error(ErrorCode::unsupported, "attention: a {} KV cache on CUDA (f32 or f16)",
                dtype_name(a.kv_dtype));
  if (a.D > kMaxDv || a.Dv > kMaxDv)
    throw_error(ErrorCode::unsupported, "attention: head_dim {} / value head_dim {} above {}", a.D, a.Dv,
                kMaxDv);
  const bool f16 = a.kv_dtype == DType::f16;
  // Taken whenever the step may split (T ≤ kRows), whatever the cache length: the plan is flat in kv_len.
  Tensor part;
  if (a.T <= kRows)
    part = Tensor::empty(pool(), DType::u8, {attention_workspace(a)}, "attention key-run partials");
  const int sms = a.T <= kRows ? sm_count() : 0;
  const Split sp = split_of(a, sms);
  if (sp.runs > 1 && group_fits(a)) {
    const Split gs = group_split_of(a, sms);
    const GroupShape sh = group_shape(a);
    const int64_t smem = group_shared_bytes(sh);
    float* runs_out = gs.runs > 1 ? static_cast<float*>(part.data()) : nullptr;
    const int64_t row_tiles = (a.T * (a.n_q / a.n_kv) + kGroupRows - 1) / kGroupRows;
    const dim3 grid(cuda::mixer::grid_blocks(a.n_kv * row_tiles, "attention"),
                    static_cast<unsigned>(gs.runs));
    cuda::mixer::allow_shared(group_decode_f16_kernel, smem, "attention shared memory");
    cuda::launch(group_decode_f16_kernel, grid, kThreads, static_cast<size_t>(smem), stream(), a, sh, gs.span,
                 runs_out);
    cuda::check(cudaGetLastError(), "attention (grouped decode) launch");
    if (gs.runs > 1) {
      cuda::launch(combine_kernel, static_cast<unsigned>(a.T * a.n_q), kThreads, 0, stream(), a, gs.runs,
                   runs_out);
      cuda::check(cudaGetLastError(), "attention combine launch");
    }
    return;
  }
  if (sp.runs > 1 && decode_fits(a)) {
    const Split ds = decode_split_of(a, sms);
    float* runs_out = ds.runs > 1 ? static_cast<float*>(part.data()) : nullptr;
    const dim3 grid(static_cast<unsigned>(a.T * a.n_q), static_cast<unsigned>(ds.runs));
    if (f16)
      cuda::launch(decode_kernel<__half>, grid, kThreads, 0, stream(), a, ds.span, runs_out);
    else
      cuda::launch(decode_kernel<float>, grid, kThreads, 0, stream(), a, ds.span, runs_out);
    cuda::check(cudaGetLastError(), "attention (decode) launch");
    if (ds.runs > 1) {
      cuda::launch(combine_kernel, static_cast<unsigned>(a.T * a.n_q), kThreads, 0, stream(), a, ds.runs,
                   runs_out);
      cuda::check(cudaGetLastError(), "attention combine launch");
    }
    return;
  }
  if (sp.runs == 1 && a.D <= kMmaMaxD) {
    const unsigned blocks = cuda::mixer::grid_blocks((a.T + kMmaRows - 1) / kMmaRows * a.n_q, "attention");
    const dim3 grid(blocks, 1, static_cast<unsigned>((a.Dv + kMmaSlab - 1) / kMmaSlab));
    if (f16) {
      const MmaF16Shape sh = mma_f16_shape(a);
      const int64_t smem = mma_f16_shared_bytes(sh);
      cuda::mixer::allow_shared(mma_attention_f16_kernel, smem, "attention shared memory");
      cuda::launch(mma_attention_f16_kernel, grid, kThreads, static_cast<size_t>(smem), stream(), a, sh);
    } else {
      const MmaShape sh = mma_shape(a);
      const int64_t smem = mma_shared_bytes(sh);
      cuda::mixer::allow_shared(mma_attention_kernel, smem, "attention shared memory");
      cuda::launch(mma_attention_kernel, grid, kThreads, static_cast<size_t>(smem), stream(), a, sh);
    }
    cuda::check(cudaGetLastError(), "attention (tensor cores) launch");
    return;
  }
  const int64_t blocks = (a.T + kRows - 1) / kRows * a.n_q, smem = shared_bytes(a);
  const dim3 grid(cuda::mixer::grid_blocks(blocks, "attention"), static_cast<unsigned>(sp.runs));
  float* runs_out = sp.runs > 1 ? static_cast<float*>(part.data()) : nullptr;
  if (f16) {
    cuda::mixer::allow_shared(attention_kernel<__half>, smem, "attention shared memory");
    cuda::launch(attention_kernel<__half>, grid, kThreads, static_cast<size_t>(smem), stream(), a,
                 stage_ld(a), sp.span, runs_out);
  } else {
    cuda::mixer::allow_shared(attention_kernel<float>, smem, "attention shared memory");
    cuda::launch(attention_kernel<float>, grid, kThreads, static_cast<size_t>(smem), stream(), a, stage_ld(a),
                 sp.span, runs_out);
  }
  cuda::check(cudaGetLastError(), "attention launch");
  if (sp.runs > 1) {
    cuda::launch(combine_kernel, static_cast<unsigned>(a.T * a.n_q), kThreads, 0, stream(), a, sp.runs,
                 runs_out);
    cuda::check(cudaGetLastError(), "attention combine launch");
  }
}

// The KV cache's rows: f32 is a copy, f16 rounds to nearest even (convert_f16_kernel).
void CudaBackend::convert(const ConvertArgs& a) {
  enter();
  if (a.n == 0) return;
  if (a.dst_dtype == DType::f32) {
    cuda::check(
        cudaMemcpyAsync(a.dst, a.src, static_cast<size_t>(a.n) * 4, cudaMemcpyDeviceToDevice, stream()),
        "convert");
    return;
  }
  if (a.dst_dtype != DType::f16)
    throw_error(ErrorCode::unsupported, "convert: to {} on CUDA (f32 and f16 only)", dtype_name(a.dst_dtype));
  cuda::launch(convert_f16_kernel, cuda::grid_blocks(a.n, cuda::kThreads), cuda::kThreads, 0, stream(), a.src,
               static_cast<__half*>(a.dst), a.n);
  cuda::check(cudaGetLastError(), "convert launch");
}

}  // namespace keel
