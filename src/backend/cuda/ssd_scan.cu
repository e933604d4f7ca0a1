// Mamba2 SSD scan on CUDA (math: ops/ssd_scan.h; the CPU kernel: backend/cpu/ssd_scan.cpp; the float64
// reference: ops/reference/ssd_scan_ref.h):
//   S[h] ← e^{dt·A[h]}·S[h] + dt·x[t,h] ⊗ B[t,g];  y[t,h] = S[h]·C[t,g] + D[h]·x[t,h]
// Two paths, both flat in T (nothing T × T, no L × L matrix over the prompt):
// - the recurrence (T ≤ Q, decode; P > kMaxP): one block per (head h, slice of kRows rows p of S[h] [P, N]),
//   the slice in shared memory for the whole call, the block walking the T tokens in order;
// - the chunked scan (T > Q, P ≤ kMaxP: every prompt step): chunks of Q tokens
//   (the config's chunk_size), kRoundChunks chunks per round, three launches per round.
//   With Λ_i = Σ_{k ≤ i} dt_k·A (chunk-local, fp32, in token order as the CPU):
//     1. chunk_state:  Sc[c] = Σ_j e^{Λ_last − Λ_j}·dt_j·x_j ⊗ B_j               (every chunk at once)
//     2. state_pass:   Sin[c] = S;  S ← e^{Λ_last}·S + Sc[c]          (the fp32 state in place, chunk order)
//     3. chunk_output: y_i = e^{Λ_i}·Sin[c]·C_i + Σ_{j ≤ i} (C_i·B_j)·e^{Λ_i − Λ_j}·dt_j·x_j + D·x_i
//   The round's workspace is kRoundChunks states [H, P, N] and their decays, whatever T is.
// A = −exp(A_log), dt_bias and D are read from the parameter vectors on the device.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/mixer_util.cuh"

namespace keel {

namespace {

using cuda::mixer::kWarp;

constexpr int kThreads = 128;  // 4 warps
constexpr int kRows = 16;      // rows p of S[h] per block (kRows / 4 per warp)
constexpr int kStage = 8;      // tokens whose B, C rows are staged in shared memory at once

// dt = clamp(softplus(dt_raw[t, h] + dt_bias[h]), dt_min, dt_max), as the CPU's dt_of.
__device__ __forceinline__ float dt_of(const SsdScanArgs& a, int64_t t, int64_t h, float bias) {
  const float sp = cuda::mixer::softplus(a.dt[t * a.dt_st + h * a.dt_sh] + bias);
  return fminf(fmaxf(sp, a.dt_min), a.dt_max);
}

// Grid: H · ⌈P / kRows⌉ blocks, head-major. Dynamic shared memory (floats): S rows [kRows, N], then for
// kStage tokens at a time their B and C rows [kStage, N] each, dt and e^{dt·A} [kStage] each.
__global__ void __launch_bounds__(kThreads) ssd_scan_kernel(const SsdScanArgs a) {
  cuda::pdl_begin();
  extern __shared__ float smem[];
  const int64_t N = a.N, p_blocks = (a.P + kRows - 1) / kRows;
  const int64_t h = blockIdx.x / p_blocks, p0 = blockIdx.x % p_blocks * kRows;
  const int rows = static_cast<int>(a.P - p0 < kRows ? a.P - p0 : kRows);
  const int64_t g = h / (a.H / a.G);
  float* S = smem;               // [rows, N]: S[h][p0 + r][n]
  float* Bs = S + kRows * N;     // [kStage, N]: B[t0 + j, g]
  float* Cs = Bs + kStage * N;   // [kStage, N]: C[t0 + j, g]
  float* dts = Cs + kStage * N;  // [kStage]: dt of token t0 + j
  float* decays = dts + kStage;  // [kStage]: e^{dt·A}
  // [rows, N]: this block's rows of state [H, P, N], contiguous
  float* Sg = a.state + (h * a.P + p0) * N;
  cuda::strided(
      threadIdx.x, rows * N, kThreads, [&](int64_t i) { return Sg[i]; },
      [&](int64_t i, float v) { S[i] = v; });
  const float A = -expf(cuda::mixer::param(a.A_log, h));
  const float bias = cuda::mixer::param(a.dt_bias, h), Dh = cuda::mixer::param(a.D, h);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int64_t t0 = 0; t0 < a.T; t0 += kStage) {
    const int nt = static_cast<int>(a.T - t0 < kStage ? a.T - t0 : kStage);
    __syncthreads();  // the previous stage's reads of B, C, dt and the decays are done
    for (int64_t i = threadIdx.x; i < nt * N; i += kThreads) {
      const int64_t t = t0 + i / N, n = i % N;
      Bs[i] = a.B[t * a.B_st + g * a.B_sg + n];
      Cs[i] = a.C[t * a.C_st + g * a.C_sg + n];
    }
    if (const int j = static_cast<int>(threadIdx.x); j < nt) {
      const float dt = dt_of(a, t0 + j, h, bias);
      dts[j] = dt;
      decays[j] = expf(dt * A);
    }
    __syncthreads();  // the stage (and at t0 = 0 the state slice) is in shared memory
    // Row r of the warp over the stage's nt tokens: each lane carries its elements S[r][n] through the nt
    // updates in registers (the same arithmetic, in the same order, as one token at a time), then the nt
    // row sums are reduced over the warp together.
    for (int r = warp; r < rows; r += kThreads / kWarp) {
      float xp[kStage], coef[kStage], acc[kStage];
#pragma unroll
      for (int j = 0; j < kStage; ++j) {
        xp[j] = j < nt ? a.x[(t0 + j) * a.x_st + h * a.x_sh + p0 + r] : 0.0f;
        coef[j] = dts[j < nt ? j : 0] * xp[j];
        acc[j] = 0;
      }
      float* s = S + r * N;
      for (int64_t n = lane; n < N; n += kWarp) {
        float sv = s[n];
#pragma unroll
        for (int j = 0; j < kStage; ++j)
          if (j < nt) {
            sv = decays[j] * sv + coef[j] * Bs[j * N + n];
            acc[j] += sv * Cs[j * N + n];
          }
        s[n] = sv;
      }
#pragma unroll
      for (int j = 0; j < kStage; ++j)
        if (j < nt) {
          const float y = cuda::mixer::warp_sum(acc[j]);
          if (lane == 0) a.y[(t0 + j) * a.y_st + h * a.y_sh + p0 + r] = y + Dh * xp[j];
        }
    }
  }
  __syncthreads();  // every warp's last update of its rows is done
  cuda::strided(
      threadIdx.x, rows * N, kThreads, [&](int64_t i) { return S[i]; },
      [&](int64_t i, float v) { Sg[i] = v; });
}

int64_t shared_bytes(const SsdScanArgs& a) {
  return 4 * ((kRows + 2 * kStage) * a.N + 2 * kStage);
}

// ---- the chunked scan ----

constexpr int64_t kRoundChunks = 16;  // chunks whose states one round holds
constexpr int kMaxP = 128;  // chunk_output keeps its rows' P outputs in registers, 4·kMaxP / 64 per thread

// One round: chunks c ∈ [0, chunks) starting at token t_base, chunk c = tokens [t_base + c·Q, … + Qc).
struct Round {
  int64_t t_base, chunks;
  float* Sc;     // [kRoundChunks, H, P, N]: chunk_state's Sc[c], then state_pass's Sin[c]
  float* decay;  // [kRoundChunks, H]: e^{Λ_last} of chunk c, head h
};

__device__ __forceinline__ int64_t chunk_len(const SsdScanArgs& a, const Round& r, int64_t c) {
  const int64_t t0 = r.t_base + c * a.Q;
  return a.T - t0 < a.Q ? a.T - t0 : a.Q;
}

// dt_j and Λ_j of the chunk's Qc tokens into shared dt[Qc], lam[Qc]: softplus in parallel, the cumsum by one
// thread in token order (Λ_i = Λ_{i−1} + dt_i·A, products rounded before the sum, as the CPU's loop).
__device__ void chunk_dt_lambda(const SsdScanArgs& a, int64_t t0, int64_t Qc, int64_t h, float A, float* dt,
                                float* lam) {
  const float bias = cuda::mixer::param(a.dt_bias, h);
  for (int64_t j = threadIdx.x; j < Qc; j += blockDim.x) dt[j] = dt_of(a, t0 + j, h, bias);
  __syncthreads();
  if (threadIdx.x == 0) {
    float run = 0;
    for (int64_t j = 0; j < Qc; ++j) lam[j] = run = __fadd_rn(run, __fmul_rn(dt[j], A));
  }
  __syncthreads();
}

// 1. Sc[c][h] [P, N] = Σ_j w_j·x_j ⊗ B_j, w_j = e^{Λ_last − Λ_j}·dt_j. Grid (H·chunks, ⌈P/32⌉·⌈N/64⌉); 256
// threads, a 32 × 64 tile of (p, n), each thread p ∈ {tp, tp + 16} × n ∈ {tn + 16k}, k < 4; tokens staged
// 32 at a time. Shared (floats): dt, lam [Q]; Xw [32, 32]; Bs [32, 64].
constexpr int kStateThreads = 256, kStateTp = 32, kStateTn = 64, kStateTj = 32;
__global__ void __launch_bounds__(kStateThreads) ssd_chunk_state_kernel(const SsdScanArgs a, const Round r) {
  cuda::pdl_begin();
  extern __shared__ float smem[];
  const int64_t h = blockIdx.x % a.H, c = blockIdx.x / a.H, g = h / (a.H / a.G);
  const int64_t n_tiles = (a.N + kStateTn - 1) / kStateTn;
  const int64_t p0 = blockIdx.y / n_tiles * kStateTp, n0 = blockIdx.y % n_tiles * kStateTn;
  const int64_t t0 = r.t_base + c * a.Q, Qc = chunk_len(a, r, c);
  float* dt = smem;
  float* lam = dt + a.Q;
  float* Xw = lam + a.Q;                 // [kStateTj, kStateTp]: w_j·x_j[p0 + p]
  float* Bs = Xw + kStateTj * kStateTp;  // [kStateTj, kStateTn]: B_j[n0 + n]
  const float A = -expf(cuda::mixer::param(a.A_log, h));
  chunk_dt_lambda(a, t0, Qc, h, A, dt, lam);
  const float last = lam[Qc - 1];
  if (blockIdx.y == 0 && threadIdx.x == 0) r.decay[c * a.H + h] = expf(last);
  const int tp = threadIdx.x / 16, tn = threadIdx.x % 16;
  float acc[2][4] = {};
  for (int64_t j0 = 0; j0 < Qc; j0 += kStateTj) {
    const int64_t nj = Qc - j0 < kStateTj ? Qc - j0 : kStateTj;
    __syncthreads();  // the previous stage's reads are done
    for (int i = threadIdx.x; i < kStateTj * kStateTp; i += kStateThreads) {
      const int64_t j = i / kStateTp, p = p0 + i % kStateTp;
      float v = 0;
      if (j < nj && p < a.P) {
        const float w = __fmul_rn(expf(last - lam[j0 + j]), dt[j0 + j]);
        v = w * a.x[(t0 + j0 + j) * a.x_st + h * a.x_sh + p];
      }
      Xw[i] = v;
    }
    for (int i = threadIdx.x; i < kStateTj * kStateTn; i += kStateThreads) {
      const int64_t j = i / kStateTn, n = n0 + i % kStateTn;
      Bs[i] = j < nj && n < a.N ? a.B[(t0 + j0 + j) * a.B_st + g * a.B_sg + n] : 0.0f;
    }
    __syncthreads();
    for (int j = 0; j < nj; ++j) {
      const float x0 = Xw[j * kStateTp + tp], x1 = Xw[j * kStateTp + tp + 16];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float b = Bs[j * kStateTn + tn + 16 * k];
        acc[0][k] += x0 * b;
        acc[1][k] += x1 * b;
      }
    }
  }
  float* out = r.Sc + (c * a.H + h) * a.P * a.N;
#pragma unroll
  for (int q = 0; q < 2; ++q)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t p = p0 + tp + 16 * q, n = n0 + tn + 16 * k;
      if (p < a.P && n < a.N) out[p * a.N + n] = acc[q][k];
    }
}

// 2. One thread per element e of the state [H, P, N], the round's chunks in order: Sin[c] = S, then
// S ← e^{Λ_last}·S + Sc[c]; the state is written back once.
__global__ void ssd_state_pass_kernel(const SsdScanArgs a, const Round r) {
  cuda::pdl_begin();
  const int64_t per_head = a.P * a.N, e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= a.H * per_head) return;
  const int64_t h = e / per_head, stride = a.H * per_head;
  float S = a.state[e];
  for (int64_t c = 0; c < r.chunks; ++c) {
    float* slot = r.Sc + c * stride + e;
    const float local = *slot;
    *slot = S;
    S = r.decay[c * a.H + h] * S + local;
  }
  a.state[e] = S;
}

// 3. y of kORows rows i of chunk c, head h, register-tiled on the CUDA cores. Grid (H·chunks, ⌈Q/kORows⌉);
// 256 threads, thread (ty, tx) = (tid / 16, tid % 16) holds rows i = 4·ty … 4·ty + 3 of the tile and columns
// p = 4·tx + 64·k … + 3 (k < kPT, P ≤ 64·kPT), each product a float4 of one operand times a float4 (or
// float2) of the other from shared memory. With every operand zero-padded in shared memory, in order:
//   y_i  = Σ_n C_i[n]·Sin[p, n]                                  (n tiles of kOTn)
//   y_i ·= e^{Λ_i}
//   y_i += Σ_{j ≤ i} M[i, j]·x_j[p],  M[i, j] = (C_i·B_j)·e^{Λ_i − Λ_j}·dt_j   (j tiles of kOTj, M per tile)
//   y_i += D·x_i
// each sum in ascending n (then j) order. Shared (floats): dt, lam [Q]; Ct [N, kORows + 4] (C of the tile's
// rows, transposed); then either St [kOTn, 64·kPT + 4] (Sin's tile, transposed) or Bt [N, kOTj + 2] (B of
// the j tile, transposed), Mt [kOTj, kORows + 4] (Mᵀ) and Xs [kOTj, 64·kPT]. (It replaced a 16-row kernel
// whose every product read both operands from shared memory one float at a time and computed each C_i·B_j
// alone: 609 µs a layer at 1K tokens on the Nemotron-H shape, docs/CUDA.md.)
constexpr int kOThreads = 256, kORows = 64, kOTj = 32, kOTn = 32;
constexpr int kOCLd = kORows + 4, kOBLd = kOTj + 2;  // Ct's and Mt's, Bt's row strides (floats)
// Offsets in floats rounded up to 16 bytes: the float4 rows start aligned.
__host__ __device__ constexpr int64_t align4(int64_t floats) {
  return (floats + 3) / 4 * 4;
}

template <int kPT>
__global__ void __launch_bounds__(kOThreads) ssd_chunk_output_kernel(const SsdScanArgs a, const Round r) {
  cuda::pdl_begin();
  extern __shared__ __align__(16) float smem[];
  constexpr int kPLd = 64 * kPT;  // Xs's row stride: the padded P
  constexpr int kSLd = kPLd + 4;  // St's (4-way bank conflicts where its columns are stored, not 32)
  const int64_t h = blockIdx.x % a.H, c = blockIdx.x / a.H, g = h / (a.H / a.G);
  const int64_t t0 = r.t_base + c * a.Q, Qc = chunk_len(a, r, c), i0 = blockIdx.y * kORows;
  if (i0 >= Qc) return;  // the whole block: a partial last chunk has fewer row tiles
  const int64_t N = a.N, P = a.P, rows = Qc - i0 < kORows ? Qc - i0 : kORows;
  float* dt = smem;
  float* lam = dt + a.Q;
  float* Ct = smem + align4(2 * a.Q);  // [N, kOCLd]: C_{i0 + i}[n] at Ct[n·kOCLd + i]
  float* R = Ct + N * kOCLd;           // the region St, or Bt, Mt and Xs use
  float* St = R;                       // [kOTn, kSLd]: Sin[p, n0 + n] at St[n·kSLd + p]
  float* Bt = R;                       // [N, kOBLd]: B_{j0 + j}[n] at Bt[n·kOBLd + j]
  float* Mt = Bt + align4(N * kOBLd);  // [kOTj, kOCLd]: M[i0 + i, j0 + j] at Mt[j·kOCLd + i]
  float* Xs = Mt + kOTj * kOCLd;       // [kOTj, kPLd]: x_{j0 + j}[p]
  const float A = -expf(cuda::mixer::param(a.A_log, h));
  chunk_dt_lambda(a, t0, Qc, h, A, dt, lam);
  for (int64_t k = threadIdx.x; k < kORows * N; k += kOThreads) {
    const int64_t i = k / N, n = k % N;
    Ct[n * kOCLd + i] = i < rows ? a.C[(t0 + i0 + i) * a.C_st + g * a.C_sg + n] : 0.0f;
  }
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  float acc[4][4 * kPT] = {};
  // acc[u][4k + v] += Σ_m Ao[m][4·ty + u]·Bo[m][4·tx + 64k + v] for m < count: rows of two shared operands.
  auto products = [&](const float* Ao, int a_ld, const float* Bo, int b_ld, int64_t count) {
    for (int64_t m = 0; m < count; ++m) {
      const float4 av = *reinterpret_cast<const float4*>(Ao + m * a_ld + 4 * ty);
      const float ar[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
      for (int k = 0; k < kPT; ++k) {
        const float4 bv = *reinterpret_cast<const float4*>(Bo + m * b_ld + 4 * tx + 64 * k);
        const float br[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int v = 0; v < 4; ++v) acc[u][4 * k + v] += ar[u] * br[v];
      }
    }
  };
  // The carried-in state.
  const float* Sin = r.Sc + (c * a.H + h) * P * N;
  for (int64_t n0 = 0; n0 < N; n0 += kOTn) {
    const int64_t nn = N - n0 < kOTn ? N - n0 : kOTn;
    __syncthreads();  // Ct is in place (the first tile), the last tile's reads of St are done
    for (int64_t k = threadIdx.x; k < kPLd * kOTn; k += kOThreads) {
      const int64_t p = k / kOTn, n = k % kOTn;
      St[n * kSLd + p] = p < P && n < nn ? Sin[p * N + n0 + n] : 0.0f;
    }
    __syncthreads();
    products(Ct + n0 * kOCLd, kOCLd, St, kSLd, nn);
  }
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int i = 4 * ty + u;
    const float e_i = i < rows ? expf(lam[i0 + i]) : 0.0f;
#pragma unroll
    for (int q = 0; q < 4 * kPT; ++q) acc[u][q] *= e_i;
  }
  // The chunk's own tokens j ≤ i (j < i0 + rows), kOTj at a time.
  for (int64_t j0 = 0; j0 < i0 + rows; j0 += kOTj) {
    const int64_t nj = i0 + rows - j0 < kOTj ? i0 + rows - j0 : kOTj;
    __syncthreads();  // the last tile's (or the state's) reads of the region are done
    for (int64_t k = threadIdx.x; k < kOTj * N; k += kOThreads) {
      const int64_t j = k / N, n = k % N;
      Bt[n * kOBLd + j] = j < nj ? a.B[(t0 + j0 + j) * a.B_st + g * a.B_sg + n] : 0.0f;
    }
    for (int64_t k = threadIdx.x; k < kOTj * kPLd; k += kOThreads) {
      const int64_t j = k / kPLd, p = k % kPLd;
      Xs[k] = j < nj && p < P ? a.x[(t0 + j0 + j) * a.x_st + h * a.x_sh + p] : 0.0f;
    }
    __syncthreads();
    {  // Mᵀ of the tile: thread (ty, tx) the rows 4·ty … + 3 and the columns j = 2·tx, 2·tx + 1, over n
      float cb[4][2] = {};
      for (int64_t n = 0; n < N; ++n) {
        const float4 cv = *reinterpret_cast<const float4*>(Ct + n * kOCLd + 4 * ty);
        const float2 bv = *reinterpret_cast<const float2*>(Bt + n * kOBLd + 2 * tx);
        const float cr[4] = {cv.x, cv.y, cv.z, cv.w};
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          cb[u][0] += cr[u] * bv.x;
          cb[u][1] += cr[u] * bv.y;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int v = 0; v < 2; ++v) {
          const int i = 4 * ty + u, j = 2 * tx + v;
          const int64_t ii = i0 + i, jj = j0 + j;
          const bool live = i < rows && j < nj && jj <= ii;
          Mt[j * kOCLd + i] = live ? cb[u][v] * __fmul_rn(expf(lam[ii] - lam[jj]), dt[jj]) : 0.0f;
        }
    }
    __syncthreads();
    products(Mt, kOCLd, Xs, kPLd, nj);
  }
  const float Dh = cuda::mixer::param(a.D, h);
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int i = 4 * ty + u;
    if (i >= rows) break;
    const int64_t t = t0 + i0 + i;
#pragma unroll
    for (int k = 0; k < kPT; ++k)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int64_t p = 4 * tx + 64 * k + v;
        if (p < P)
          a.y[t * a.y_st + h * a.y_sh + p] = acc[u][4 * k + v] + Dh * a.x[t * a.x_st + h * a.x_sh + p];
      }
  }
}

// Prompt steps take the chunked scan: measured on the H200 (eight Mamba2 layers at Nemotron-H 30B-A3B widths,
// prefill chunks of 4096) it prefilled 60.2K tok/s against the recurrence's 46.5K (docs/CUDA.md).
bool chunked(const SsdScanArgs& a) {
  return a.T > a.Q && a.P <= kMaxP;
}

int64_t state_shared_bytes(const SsdScanArgs& a) {
  return 4 * (2 * a.Q + kStateTj * kStateTp + kStateTj * kStateTn);
}

int output_column_tiles(const SsdScanArgs& a) {
  return a.P <= 64 ? 1 : 2;
}

int64_t output_shared_bytes(const SsdScanArgs& a) {
  const int64_t pld = 64 * output_column_tiles(a);
  const int64_t state = kOTn * (pld + 4), own = align4(a.N * kOBLd) + kOTj * kOCLd + kOTj * pld;
  return 4 * (align4(2 * a.Q) + a.N * kOCLd + (state > own ? state : own));
}

int64_t round_floats(const SsdScanArgs& a) {
  return kRoundChunks * a.H * (a.P * a.N + 1);
}

}  // namespace

// The recurrence takes nothing from the pool (the parameters are read where they are stored); the chunked
// scan takes one round's chunk states and decays, 4·kRoundChunks·H·(P·N + 1) bytes at every T > Q.
int64_t CudaBackend::ssd_scan_workspace(const SsdScanArgs& a) const {
  return chunked(a) ? 4 * round_floats(a) : 0;
}

void CudaBackend::ssd_scan(const SsdScanArgs& a) {
  enter();
  if (a.T == 0 || a.H == 0 || a.P == 0) return;
  if (!chunked(a)) {
    const int64_t blocks = a.H * ((a.P + kRows - 1) / kRows), smem = shared_bytes(a);
    cuda::mixer::allow_shared(ssd_scan_kernel, smem, "ssd_scan shared memory");
    cuda::launch(ssd_scan_kernel, cuda::mixer::grid_blocks(blocks, "ssd_scan"), kThreads,
                 static_cast<size_t>(smem), stream(), a);
    cuda::check(cudaGetLastError(), "ssd_scan launch");
    return;
  }
  const int64_t state_smem = state_shared_bytes(a), out_smem = output_shared_bytes(a);
  cuda::mixer::allow_shared(ssd_chunk_state_kernel, state_smem, "ssd_scan chunk states shared memory");
  const auto output_kernel =
      output_column_tiles(a) == 1 ? ssd_chunk_output_kernel<1> : ssd_chunk_output_kernel<2>;
  cuda::mixer::allow_shared(output_kernel, out_smem, "ssd_scan chunk outputs shared memory");
  Tensor ws = Tensor::empty(pool(), DType::f32, {round_floats(a)}, "ssd_scan chunk states");
  Round r{0, 0, ws.ptr<float>(), ws.ptr<float>() + kRoundChunks * a.H * a.P * a.N};
  const int64_t chunks_total = (a.T + a.Q - 1) / a.Q, elems = a.H * a.P * a.N;
  const unsigned int state_tiles =
      static_cast<unsigned int>(((a.P + kStateTp - 1) / kStateTp) * ((a.N + kStateTn - 1) / kStateTn));
  const unsigned int row_tiles = static_cast<unsigned int>((a.Q + kORows - 1) / kORows);
  if (state_tiles > 65535 || row_tiles > 65535)
    throw_error(ErrorCode::unsupported, "ssd_scan: P = {}, N = {}, Q = {} exceed the grid's y limit", a.P,
                a.N, a.Q);
  for (int64_t c0 = 0; c0 < chunks_total; c0 += kRoundChunks) {
    r.t_base = c0 * a.Q;
    r.chunks = std::min(kRoundChunks, chunks_total - c0);
    const unsigned int hc = cuda::mixer::grid_blocks(a.H * r.chunks, "ssd_scan");
    cuda::launch(ssd_chunk_state_kernel, dim3(hc, state_tiles), kStateThreads,
                 static_cast<size_t>(state_smem), stream(), a, r);
    cuda::launch(ssd_state_pass_kernel, cuda::mixer::grid_blocks((elems + 255) / 256, "ssd_scan"), 256, 0,
                 stream(), a, r);
    cuda::launch(output_kernel, dim3(hc, row_tiles), kOThreads, static_cast<size_t>(out_smem), stream(), a,
                 r);
    cuda::check(cudaGetLastError(), "ssd_scan launch");
  }
}

}  // namespace keel
