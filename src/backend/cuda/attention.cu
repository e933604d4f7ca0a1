// Causal attention on CUDA (math: ops/attention.h; the CPU kernel: backend/cpu/attention.cpp; the float64
// reference: ops/reference/). Flash style: one block per (query tile of kRows positions, query head), the
// online softmax in f32 (running max m and sum l per row), keys in tiles of kKeyTile at the fixed absolute
// boundaries 0, 64, 128, … (the op's reduction order), each tile's K and V staged through shared memory in
// halves of kSub rows. Query i (absolute position offset + i) sees keys [0, offset + i]; GQA: query head h
// reads KV head h / (n_q / n_kv). Per tile, as the CPU: m' = max(m, tile max), α = e^{m − m'},
// p_j = e^{s_j − m'}, l ← α·l + Σp, o ← α·o + Σ p_j·v_j; at the end o / l (times 1/l). Nothing of size T ×
// kv_len exists anywhere; no workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/mixer_util.cuh"

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

// Grid: ⌈T / kRows⌉ · n_q blocks (the heads of one tile consecutive: they share KV rows in L2).
__global__ void __launch_bounds__(kThreads) attention_kernel(const AttentionArgs a, const int64_t ld) {
  extern __shared__ float4 smem_f4[];  // (declared as float4: P is read as float4s)
  float* smem = reinterpret_cast<float*>(smem_f4);
  const int64_t D = a.D, Dv = a.Dv;
  const int64_t h = blockIdx.x % a.n_q, i0 = blockIdx.x / a.n_q * kRows;
  const int rows = static_cast<int>(a.T - i0 < kRows ? a.T - i0 : kRows);
  const int64_t hk = h / (a.n_q / a.n_kv);
  const float* K = a.k + hk * a.k_sh;  // key j at K + j·k_st, [D]
  const float* V = a.v + hk * a.v_sh;  // value j at V + j·v_st, [Dv]
  float* P = smem;                     // [kKeyTile, kRows]: P[j * kRows + r], row r's score of key k0 + j
  float* Qs = P + kKeyTile * kRows;    // [kRows, D]: q[i0 + r, h] (zeros past T)
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
  const int64_t first = a.offset + i0;    // absolute position of row 0
  const int64_t keys_end = first + rows;  // the last row sees keys [0, keys_end)
  for (int64_t k0 = 0; k0 < keys_end; k0 += kKeyTile) {
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
  // l was last written before a barrier of the loop (which runs at least once: keys_end ≥ 1).
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

}  // namespace

// The kernel takes nothing from the pool.
int64_t CudaBackend::attention_workspace(const AttentionArgs&) const {
  return 0;
}

void CudaBackend::attention(const AttentionArgs& a) {
  enter();
  if (a.T == 0 || a.n_q == 0) return;
  if (a.key_tile != kKeyTile || a.query_tile != kRows)
    throw_error(ErrorCode::unsupported,
                "attention: key tile {} / query tile {} (the CUDA kernel has {} / {})", a.key_tile,
                a.query_tile, kKeyTile, kRows);
  if (a.D > kMaxDv || a.Dv > kMaxDv)
    throw_error(ErrorCode::unsupported, "attention: head_dim {} / value head_dim {} above {}", a.D, a.Dv,
                kMaxDv);
  const int64_t blocks = (a.T + kRows - 1) / kRows * a.n_q, smem = shared_bytes(a);
  cuda::mixer::allow_shared(attention_kernel, smem, "attention shared memory");
  attention_kernel<<<cuda::mixer::grid_blocks(blocks, "attention"), kThreads, static_cast<size_t>(smem),
                     stream()>>>(a, stage_ld(a));
  cuda::check(cudaGetLastError(), "attention launch");
}

}  // namespace keel
