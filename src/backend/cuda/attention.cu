// Causal attention on CUDA (math: ops/attention.h; the CPU kernel: backend/cpu/attention.cpp; the float64
// reference: ops/reference/). Flash style: one block per (query tile of kRows positions, query head), the
// online softmax in f32 (running max m and sum l per row), keys in tiles of kKeyTile at the fixed absolute
// boundaries 0, 64, 128, … (the op's reduction order), each tile's K and V staged through shared memory in
// halves of kSub rows. Query i (absolute position offset + i) sees keys [0, offset + i]; GQA: query head h
// reads KV head h / (n_q / n_kv). Per tile, as the CPU: m' = max(m, tile max), α = e^{m − m'},
// p_j = e^{s_j − m'}, l ← α·l + Σp, o ← α·o + Σ p_j·v_j; at the end o / l (times 1/l). Nothing of size T ×
// kv_len exists anywhere.
// Split keys (flash-decoding) for steps of one query tile (T ≤ kRows: decode) over a long cache (≥
// 2·kMinSplitTiles tiles; shorter caches keep one run, whose result is bitwise the one-shot prefill's): where
// the rows are float4-aligned, decode_kernel below (a warp per 32 keys, one block per row, head and run),
// else the tile kernel's S runs of whole tiles, grid y = S (so ⌈T/kRows⌉·n_q·S blocks fill the device where
// n_q alone would leave most SMs idle), each run's block writes its rows' m, l and unnormalized o to the
// workspace, and combine_kernel merges the runs: M = max m_s, w_s = e^{m_s − M}, o = Σ w_s·o_s / Σ w_s·l_s.
// S depends on the step's kv length, T·n_q and the device's SM count; a row's sums then run in another order
// than one block's (within f32 rounding: the GPU's batch-invariance bar). Workspace: kMaxSplits runs of [T,
// n_q, Dv + 2] f32 when T ≤ kRows, else none.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
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
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const AttentionArgs a, const int64_t ld, const int64_t span, float* part) {
  extern __shared__ float4 smem_f4[];  // (declared as float4: P is read as float4s)
  float* smem = reinterpret_cast<float*>(smem_f4);
  const int64_t D = a.D, Dv = a.Dv;
  const int64_t h = blockIdx.x % a.n_q, i0 = blockIdx.x / a.n_q * kRows;
  const int rows = static_cast<int>(a.T - i0 < kRows ? a.T - i0 : kRows);
  const int64_t hk = h / (a.n_q / a.n_kv);
  const float* K = static_cast<const float*>(a.k) + hk * a.k_sh;  // key j at K + j·k_st, [D]
  const float* V = static_cast<const float*>(a.v) + hk * a.v_sh;  // value j at V + j·v_st, [Dv]
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
        KV[j * ld + d] = kb + j < k1 ? K[(kb + j) * a.k_st + d] : 0.0f;
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
        KV[j * ld + c] = kb + j < k1 ? V[(kb + j) * a.v_st + c] : 0.0f;
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

__global__ void __launch_bounds__(kThreads)
    decode_kernel(const AttentionArgs a, const int64_t span, float* part) {
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
  const float* K = static_cast<const float*>(a.k) + hk * a.k_sh;
  const float* V = static_cast<const float*>(a.v) + hk * a.v_sh;
  float m = kNegInf, l = 0;
  float4 o[kMaxCols4];
#pragma unroll
  for (int i = 0; i < kMaxCols4; ++i) o[i] = make_float4(0, 0, 0, 0);
  for (int64_t c0 = begin + kWarp * warp; c0 < end; c0 += kWarp * kWarps) {
    const int64_t key = c0 + lane;
    const bool live = key < end;
    float s = kNegInf;
    if (live) {
      const float4* kr = reinterpret_cast<const float4*>(K + key * a.k_st);
      float dot = 0;
#pragma unroll 8
      for (int64_t d = 0; d < D4; ++d) {  // unrolled: the lane's loads of its key row in flight together
        const float4 k = kr[d], q = q4[d];
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
      const float4* vr = reinterpret_cast<const float4*>(V + (c0 + j) * a.v_st);
#pragma unroll
      for (int i = 0; i < kMaxCols4; ++i) {
        const int64_t c = lane + kWarp * i;
        if (c < Dv4) {
          const float4 v = vr[c];
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

// The decode kernel takes the step: T ≤ kRows and every row it reads as float4s 16-byte aligned.
bool decode_fits(const AttentionArgs& a) {
  const auto al = [](const void* p, int64_t st, int64_t sh) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && st % 4 == 0 && sh % 4 == 0;
  };
  return a.T <= kRows && a.D % 4 == 0 && a.Dv % 4 == 0 && al(a.q, a.q_st, a.q_sh) &&
         al(a.k, a.k_st, a.k_sh) && al(a.v, a.v_st, a.v_sh);
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

// One block per (row t, head h): the S runs' partials merged in run order into out[t, h].
__global__ void __launch_bounds__(kThreads)
    combine_kernel(const AttentionArgs a, const int64_t S, const float* part) {
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

// Split steps (T ≤ kRows): kMaxSplits runs of partials [T, n_q, Dv + 2] f32, whatever the cache length.
int64_t CudaBackend::attention_workspace(const AttentionArgs& a) const {
  return a.T <= kRows ? kMaxSplits * a.T * a.n_q * (a.Dv + 2) * 4 : 0;
}

void CudaBackend::attention(const AttentionArgs& a) {
  enter();
  if (a.T == 0 || a.n_q == 0) return;
  if (a.key_tile != kKeyTile || a.query_tile != kRows)
    throw_error(ErrorCode::unsupported,
                "attention: key tile {} / query tile {} (the CUDA kernel has {} / {})", a.key_tile,
                a.query_tile, kKeyTile, kRows);
  if (a.kv_dtype != DType::f32)
    throw_error(ErrorCode::unsupported, "attention: a {} KV cache on CUDA (f32 only)",
                dtype_name(a.kv_dtype));
  if (a.D > kMaxDv || a.Dv > kMaxDv)
    throw_error(ErrorCode::unsupported, "attention: head_dim {} / value head_dim {} above {}", a.D, a.Dv,
                kMaxDv);
  // Taken whenever the step may split (T ≤ kRows), whatever the cache length: the plan is flat in kv_len.
  Tensor part;
  if (a.T <= kRows)
    part = Tensor::empty(pool(), DType::u8, {attention_workspace(a)}, "attention key-run partials");
  const int sms = a.T <= kRows ? sm_count() : 0;
  const Split sp = split_of(a, sms);
  if (sp.runs > 1 && decode_fits(a)) {
    const Split ds = decode_split_of(a, sms);
    float* runs_out = ds.runs > 1 ? static_cast<float*>(part.data()) : nullptr;
    decode_kernel<<<dim3(static_cast<unsigned>(a.T * a.n_q), static_cast<unsigned>(ds.runs)), kThreads, 0,
                    stream()>>>(a, ds.span, runs_out);
    cuda::check(cudaGetLastError(), "attention (decode) launch");
    if (ds.runs > 1) {
      combine_kernel<<<static_cast<unsigned>(a.T * a.n_q), kThreads, 0, stream()>>>(a, ds.runs, runs_out);
      cuda::check(cudaGetLastError(), "attention combine launch");
    }
    return;
  }
  const int64_t blocks = (a.T + kRows - 1) / kRows * a.n_q, smem = shared_bytes(a);
  cuda::mixer::allow_shared(attention_kernel, smem, "attention shared memory");
  const dim3 grid(cuda::mixer::grid_blocks(blocks, "attention"), static_cast<unsigned>(sp.runs));
  attention_kernel<<<grid, kThreads, static_cast<size_t>(smem), stream()>>>(
      a, stage_ld(a), sp.span, sp.runs > 1 ? static_cast<float*>(part.data()) : nullptr);
  cuda::check(cudaGetLastError(), "attention launch");
  if (sp.runs > 1) {
    combine_kernel<<<static_cast<unsigned>(a.T * a.n_q), kThreads, 0, stream()>>>(
        a, sp.runs, static_cast<const float*>(part.data()));
    cuda::check(cudaGetLastError(), "attention combine launch");
  }
}

}  // namespace keel
