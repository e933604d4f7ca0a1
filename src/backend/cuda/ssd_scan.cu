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
constexpr int kMaxP = 128;  // chunk_output keeps a row's P outputs in registers, kMaxP / 8 per thread

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

// 3. y of 16 rows i of chunk c, head h. Grid (H·chunks, ⌈Q/16⌉); 128 threads, thread (i = tid / 8, p ∈
// {tid % 8 + 8k}). The carried-in part e^{Λ_i}·Σ_n C_i[n]·Sin[p, n] over N in tiles of 32; then the chunk's
// own tokens j ≤ i in tiles of 32: M[i, j] = (C_i·B_j)·e^{Λ_i − Λ_j}·dt_j (zero above the diagonal), y +=
// M·X. Shared (floats): dt, lam [Q]; Cs [16, N + 1]; Bs [32, N + 1]; Xs [32, P]; Ss [P, 33]; Ms [16, 33]
// (rows padded by one float: a warp's lanes read different rows at one n).
constexpr int kOutThreads = 128, kOutRows = 16, kOutTj = 32, kOutTn = 32;
__global__ void __launch_bounds__(kOutThreads) ssd_chunk_output_kernel(const SsdScanArgs a, const Round r) {
  extern __shared__ float smem[];
  const int64_t h = blockIdx.x % a.H, c = blockIdx.x / a.H, g = h / (a.H / a.G);
  const int64_t t0 = r.t_base + c * a.Q, Qc = chunk_len(a, r, c), i0 = blockIdx.y * kOutRows;
  if (i0 >= Qc) return;  // the whole block: a partial last chunk has fewer row tiles
  const int64_t N = a.N, P = a.P, rows = Qc - i0 < kOutRows ? Qc - i0 : kOutRows, ld = N + 1;
  float* dt = smem;
  float* lam = dt + a.Q;
  float* Cs = lam + a.Q;              // [kOutRows, ld]
  float* Bs = Cs + kOutRows * ld;     // [kOutTj, ld]
  float* Xs = Bs + kOutTj * ld;       // [kOutTj, P]
  float* Ss = Xs + kOutTj * P;        // [P, kOutTn + 1]
  float* Ms = Ss + P * (kOutTn + 1);  // [kOutRows, kOutTj + 1]
  const float A = -expf(cuda::mixer::param(a.A_log, h));
  chunk_dt_lambda(a, t0, Qc, h, A, dt, lam);
  for (int64_t k = threadIdx.x; k < kOutRows * N; k += kOutThreads) {
    const int64_t i = k / N;
    Cs[i * ld + k % N] = i < rows ? a.C[(t0 + i0 + i) * a.C_st + g * a.C_sg + k % N] : 0.0f;
  }
  const int ti = threadIdx.x / 8, tp = threadIdx.x % 8;
  constexpr int kPer = kMaxP / 8;
  float acc[kPer] = {};
  // The carried-in state.
  const float* Sin = r.Sc + (c * a.H + h) * P * N;
  for (int64_t n0 = 0; n0 < N; n0 += kOutTn) {
    const int64_t nn = N - n0 < kOutTn ? N - n0 : kOutTn;
    __syncthreads();
    for (int64_t k = threadIdx.x; k < P * kOutTn; k += kOutThreads) {
      const int64_t p = k / kOutTn, n = k % kOutTn;
      Ss[p * (kOutTn + 1) + n] = n < nn ? Sin[p * N + n0 + n] : 0.0f;
    }
    __syncthreads();
    const float* ci = Cs + ti * ld + n0;
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const int64_t p = tp + 8 * q;
      if (p >= P) break;
      float s = 0;
      for (int n = 0; n < nn; ++n) s += ci[n] * Ss[p * (kOutTn + 1) + n];
      acc[q] += s;
    }
  }
  const float e_i = ti < rows ? expf(lam[i0 + ti]) : 0.0f;
#pragma unroll
  for (int q = 0; q < kPer; ++q) acc[q] *= e_i;
  // The chunk's own tokens j ≤ i (j < i0 + rows).
  for (int64_t j0 = 0; j0 < i0 + rows; j0 += kOutTj) {
    const int64_t nj = i0 + rows - j0 < kOutTj ? i0 + rows - j0 : kOutTj;
    __syncthreads();
    for (int64_t k = threadIdx.x; k < kOutTj * N; k += kOutThreads) {
      const int64_t j = k / N;
      Bs[j * ld + k % N] = j < nj ? a.B[(t0 + j0 + j) * a.B_st + g * a.B_sg + k % N] : 0.0f;
    }
    for (int64_t k = threadIdx.x; k < kOutTj * P; k += kOutThreads) {
      const int64_t j = k / P;
      Xs[k] = j < nj ? a.x[(t0 + j0 + j) * a.x_st + h * a.x_sh + k % P] : 0.0f;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < kOutRows * kOutTj; k += kOutThreads) {
      const int i = k / kOutTj, j = k % kOutTj;
      const int64_t ii = i0 + i, jj = j0 + j;
      float m = 0;
      if (i < rows && j < nj && jj <= ii) {
        const float* ci = Cs + i * ld;
        const float* bj = Bs + j * ld;
        float cb = 0;
        for (int64_t n = 0; n < N; ++n) cb += ci[n] * bj[n];
        m = cb * __fmul_rn(expf(lam[ii] - lam[jj]), dt[jj]);
      }
      Ms[i * (kOutTj + 1) + j] = m;
    }
    __syncthreads();
    const float* mi = Ms + ti * (kOutTj + 1);
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const int64_t p = tp + 8 * q;
      if (p >= P) break;
      float s = 0;
      for (int j = 0; j < nj; ++j) s += mi[j] * Xs[j * P + p];
      acc[q] += s;
    }
  }
  if (ti >= rows) return;
  const float Dh = cuda::mixer::param(a.D, h);
  const int64_t t = t0 + i0 + ti;
#pragma unroll
  for (int q = 0; q < kPer; ++q) {
    const int64_t p = tp + 8 * q;
    if (p >= P) break;
    a.y[t * a.y_st + h * a.y_sh + p] = acc[q] + Dh * a.x[t * a.x_st + h * a.x_sh + p];
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

int64_t output_shared_bytes(const SsdScanArgs& a) {
  return 4 * (2 * a.Q + (kOutRows + kOutTj) * (a.N + 1) + kOutTj * a.P + a.P * (kOutTn + 1) +
              kOutRows * (kOutTj + 1));
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
    ssd_scan_kernel<<<cuda::mixer::grid_blocks(blocks, "ssd_scan"), kThreads, static_cast<size_t>(smem),
                      stream()>>>(a);
    cuda::check(cudaGetLastError(), "ssd_scan launch");
    return;
  }
  const int64_t state_smem = state_shared_bytes(a), out_smem = output_shared_bytes(a);
  cuda::mixer::allow_shared(ssd_chunk_state_kernel, state_smem, "ssd_scan chunk states shared memory");
  cuda::mixer::allow_shared(ssd_chunk_output_kernel, out_smem, "ssd_scan chunk outputs shared memory");
  Tensor ws = Tensor::empty(pool(), DType::f32, {round_floats(a)}, "ssd_scan chunk states");
  Round r{0, 0, ws.ptr<float>(), ws.ptr<float>() + kRoundChunks * a.H * a.P * a.N};
  const int64_t chunks_total = (a.T + a.Q - 1) / a.Q, elems = a.H * a.P * a.N;
  const unsigned int state_tiles =
      static_cast<unsigned int>(((a.P + kStateTp - 1) / kStateTp) * ((a.N + kStateTn - 1) / kStateTn));
  const unsigned int row_tiles = static_cast<unsigned int>((a.Q + kOutRows - 1) / kOutRows);
  if (state_tiles > 65535 || row_tiles > 65535)
    throw_error(ErrorCode::unsupported, "ssd_scan: P = {}, N = {}, Q = {} exceed the grid's y limit", a.P,
                a.N, a.Q);
  for (int64_t c0 = 0; c0 < chunks_total; c0 += kRoundChunks) {
    r.t_base = c0 * a.Q;
    r.chunks = std::min(kRoundChunks, chunks_total - c0);
    const unsigned int hc = cuda::mixer::grid_blocks(a.H * r.chunks, "ssd_scan");
    ssd_chunk_state_kernel<<<dim3(hc, state_tiles), kStateThreads, static_cast<size_t>(state_smem),
                             stream()>>>(a, r);
    ssd_state_pass_kernel<<<cuda::mixer::grid_blocks((elems + 255) / 256, "ssd_scan"), 256, 0, stream()>>>(a,
                                                                                                           r);
    ssd_chunk_output_kernel<<<dim3(hc, row_tiles), kOutThreads, static_cast<size_t>(out_smem), stream()>>>(a,
                                                                                                           r);
    cuda::check(cudaGetLastError(), "ssd_scan launch");
  }
}

}  // namespace keel
