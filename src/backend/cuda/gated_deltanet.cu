// Gated DeltaNet on CUDA (math: ops/gated_deltanet.h; the CPU kernel: backend/cpu/gated_deltanet.cpp; the
// float64 reference: ops/reference/gated_deltanet_ref.h). The recurrent form, token by token at every T
// (value head h, key head h / (Hv / Hk), S [Dk, Dv] f32):
//   q ← q·rsqrt(Σq² + eps)/√Dk, k ← k·rsqrt(Σk² + eps) (qk_l2norm; the 1/√Dk always), β = σ(b),
//   g = −exp(A_log)·softplus(a + dt_bias);  v' = β(v − e^g·Sᵀk);  S ← e^g·S + k v'ᵀ;  o = Sᵀq
// as the CPU computes it (Sᵀk from the state before the decay, scaled by e^g). One block per (value head,
// slice of kCols columns of S): each thread owns the elements S[d][c] of one column c with d ≡ s (mod
// kSlices) in shared memory for the whole call (read once, written back once). The chunked WY form (C > 0 at
// T > 1) below it. No workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/mixer_util.cuh"

namespace keel {

namespace {

using cuda::mixer::kWarp;

constexpr int kCols = 32;   // columns j of S per block (the chunked form: threadIdx.x)
constexpr int kSlices = 4;  // slices of the Dk rows (the chunked form: threadIdx.y)
constexpr int kThreads = kCols * kSlices;

// Grid: Hv · ⌈Dv / kCols⌉ blocks, head-major; 128 threads. Warp w owns columns j0 + 8w … j0 + 8w + 7; lane
// (cl, s) = (lane % 8, lane / 8) owns column c = 8w + cl at rows d ≡ s (mod kSlices), so Sᵀk and Sᵀq are
// reduced over s within the warp (two shuffles) and a token needs no block barrier: the block stages kStage
// tokens' q and k rows, their l2 norms and gates, then walks them. Dynamic shared memory (floats): S [Dk,
// kSLd] (rows padded: the warp's 32 lanes hit 32 banks), raw q and k rows [kStage, Dk] each, the factors
// qf, kf, e^g and β [kStage] each.
constexpr int kStage = 8;                                 // tokens staged per barrier pair
constexpr int kSLd = kCols + 8;                           // S's row stride in shared memory
constexpr int kColsPerWarp = kCols / (kThreads / kWarp);  // 8
static_assert(kColsPerWarp * kSlices == kWarp, "a warp: kColsPerWarp columns × kSlices row slices");
__global__ void __launch_bounds__(kThreads) gated_deltanet_kernel(const GatedDeltaNetArgs a) {
  extern __shared__ float smem[];
  const int64_t Dk = a.Dk, Dv = a.Dv, col_blocks = (Dv + kCols - 1) / kCols;
  const int64_t h = blockIdx.x / col_blocks, j0 = blockIdx.x % col_blocks * kCols;
  const int64_t kh = h / (a.Hv / a.Hk);
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int c = warp * kColsPerWarp + lane % kColsPerWarp, s = lane / kColsPerWarp;
  const bool col = j0 + c < Dv;
  float* S = smem;               // [Dk, kSLd]: S[h][d][j0 + c] at S[d·kSLd + c]
  float* qs = S + Dk * kSLd;     // [kStage, Dk] q[t0 + j, kh] as stored
  float* ks = qs + kStage * Dk;  // [kStage, Dk] k[t0 + j, kh] as stored
  float* qf = ks + kStage * Dk;  // [kStage] q's factor (1/√Dk, times rsqrt(Σq² + eps) when l2)
  float* kf = qf + kStage;       // [kStage] k's factor
  float* decay = kf + kStage;    // [kStage] e^g
  float* beta = decay + kStage;  // [kStage] β
  // Column j0 + c of S[h] in state [Hv, Dk, Dv]: rows Dv floats apart.
  float* Sg = a.state + h * Dk * Dv + j0 + c;
  cuda::strided(
      s, Dk, kSlices, [&](int64_t d) { return col ? Sg[d * Dv] : 0.0f; },
      [&](int64_t d, float v) { S[d * kSLd + c] = v; });
  const float neg_A = -expf(cuda::mixer::param(a.A_log, h)), bias = cuda::mixer::param(a.dt_bias, h);
  const float q_scale = 1.0f / sqrtf(static_cast<float>(Dk));
  for (int64_t t0 = 0; t0 < a.T; t0 += kStage) {
    const int nt = static_cast<int>(a.T - t0 < kStage ? a.T - t0 : kStage);
    __syncthreads();  // the previous stage's reads of the rows and factors are done
    for (int64_t i = tid; i < nt * Dk; i += kThreads) {
      const int64_t t = t0 + i / Dk, d = i % Dk;
      qs[i] = a.q[t * a.q_st + kh * a.q_sh + d];
      ks[i] = a.k[t * a.k_st + kh * a.k_sh + d];
    }
    if (tid < nt) {
      const int64_t t = t0 + tid;
      decay[tid] = expf(neg_A * cuda::mixer::softplus(a.a[t * a.a_st + h * a.a_sh] + bias));
      beta[tid] = 1.0f / (1.0f + expf(-a.b[t * a.b_st + h * a.b_sh]));
    }
    __syncthreads();
    // The factors the CPU's normalize() multiplies by (q·qf and k·kf are its rows qn and kn): one warp per
    // row, rows 0 … nt − 1 the q rows and nt … 2nt − 1 the k rows.
    for (int r = warp; r < 2 * nt; r += kThreads / kWarp) {
      const float* row = r < nt ? qs + r * Dk : ks + (r - nt) * Dk;
      float ss = 0;
      for (int64_t d = lane; d < Dk; d += kWarp) ss += row[d] * row[d];
      ss = cuda::mixer::warp_sum(ss);
      if (lane == 0) {
        const float l2 = a.qk_l2norm ? 1.0f / sqrtf(ss + a.eps) : 1.0f;
        if (r < nt)
          qf[r] = a.qk_l2norm ? q_scale * l2 : q_scale;
        else
          kf[r - nt] = l2;
      }
    }
    __syncthreads();
    for (int j = 0; j < nt; ++j) {
      const int64_t t = t0 + j;
      const float* qr = qs + j * Dk;
      const float* kr = ks + j * Dk;
      const float q_f = qf[j], k_f = kf[j], e = decay[j];
      // Sᵀk of the state before the decay (this lane's rows, then over the warp's 4 slices of column c).
      float part = 0;
      for (int64_t d = s; d < Dk; d += kSlices) part += (kr[d] * k_f) * S[d * kSLd + c];
      part += __shfl_xor_sync(0xffffffffu, part, kColsPerWarp);
      part += __shfl_xor_sync(0xffffffffu, part, 2 * kColsPerWarp);
      const float v = col ? a.v[t * a.v_st + h * a.v_sh + j0 + c] : 0.0f;
      const float vp = beta[j] * (v - e * part);
      // S ← e·S + k v'ᵀ and o = Sᵀq over the lane's elements, then over the slices.
      float o = 0;
      for (int64_t d = s; d < Dk; d += kSlices) {
        const float sv = e * S[d * kSLd + c] + (kr[d] * k_f) * vp;
        S[d * kSLd + c] = sv;
        o += (qr[d] * q_f) * sv;
      }
      o += __shfl_xor_sync(0xffffffffu, o, kColsPerWarp);
      o += __shfl_xor_sync(0xffffffffu, o, 2 * kColsPerWarp);
      if (s == 0 && col) a.out[t * a.o_st + h * a.o_sh + j0 + c] = o;
    }
  }
  if (col)  // the lane's own elements: no other thread wrote them
    for (int64_t d = s; d < Dk; d += kSlices) Sg[d * Dv] = S[d * kSLd + c];
}

int64_t shared_bytes(const GatedDeltaNetArgs& a) {
  return 4 * (a.Dk * kSLd + 2 * kStage * a.Dk + 4 * kStage);
}

// The chunked WY form (C > 0, T > 1) over chunks of Ce = min(C, T) tokens, per chunk (γ the chunk-local
// inclusive cumsum of g, rows q̂ and k̂ normalized as above):
//   A[i][j] = β_i (k̂_i·k̂_j) e^{γ_i − γ_j} (j < i)
//   V_new = (I + A)⁻¹ diag(β) (V − diag(e^γ) K̂ S)      (forward substitution, column by column)
//   o_i = e^{γ_i} q̂_i·S + Σ_{j ≤ i} (q̂_i·k̂_j) e^{γ_i − γ_j} V_new_j
//   S ← e^{γ_last} S + Σ_j k̂_j e^{γ_last − γ_j} ⊗ V_new_j
// This is the CPU's WY form with W·S folded into the right-hand side before the substitution (W = −(I +
// A)⁻¹ diag(β e^γ) K̂, so U − W·S is the line above): the same math, no [Ce, Dk] W. Same grid and block as
// the recurrence, one block per (value head, kCols columns of S); A and q̂·k̂ are computed by every column
// block of a head (they do not depend on the columns). Dynamic shared memory (floats): S [Dk, kCols], Q̂ and
// K̂ [Ce, Dk + 1] each (odd rows: threads reading different rows hit different banks), A (then the q̂·k̂
// coefficients) [Ce, Ce], V_new [Ce, kCols], γ, β [Ce] each.
__global__ void __launch_bounds__(kThreads) gated_deltanet_chunked_kernel(const GatedDeltaNetArgs a) {
  extern __shared__ float smem[];
  const int64_t Dk = a.Dk, Dv = a.Dv, col_blocks = (Dv + kCols - 1) / kCols, ld = Dk + 1;
  const int64_t h = blockIdx.x / col_blocks, j0 = blockIdx.x % col_blocks * kCols;
  const int64_t kh = h / (a.Hv / a.Hk), Ce = a.C < a.T ? a.C : a.T;
  const int c = threadIdx.x, s = threadIdx.y, tid = s * kCols + c;
  const bool col = j0 + c < Dv;
  float* S = smem;              // [Dk, kCols]: S[h][d][j0 + c]
  float* Qn = S + Dk * kCols;   // [Ce, ld]: q̂ of the chunk's tokens
  float* Kn = Qn + Ce * ld;     // [Ce, ld]: k̂
  float* A = Kn + Ce * ld;      // [Ce, Ce]: A, then M[i][j] = (q̂_i·k̂_j) e^{γ_i − γ_j}
  float* U = A + Ce * Ce;       // [Ce, kCols]: the right-hand side, then V_new
  float* gam = U + Ce * kCols;  // [Ce]: g, then γ
  float* beta = gam + Ce;       // [Ce]
  // Column j0 + c of S[h] in state [Hv, Dk, Dv]: rows Dv floats apart.
  float* Sg = a.state + h * Dk * Dv + j0 + c;
  for (int64_t d = s; d < Dk; d += kSlices) S[d * kCols + c] = col ? Sg[d * Dv] : 0.0f;
  const float neg_A = -expf(cuda::mixer::param(a.A_log, h)), bias = cuda::mixer::param(a.dt_bias, h);
  const float q_scale = 1.0f / sqrtf(static_cast<float>(Dk));
  const int warp = tid / kWarp, lane = tid % kWarp;
  for (int64_t t0 = 0; t0 < a.T; t0 += Ce) {
    const int64_t Cc = a.T - t0 < Ce ? a.T - t0 : Ce;
    __syncthreads();  // the previous chunk is done with Q̂, K̂, V_new and γ (and S is loaded)
    for (int64_t i = tid; i < Cc * Dk; i += kThreads) {
      const int64_t r = i / Dk, d = i % Dk, t = t0 + r;
      Qn[r * ld + d] = a.q[t * a.q_st + kh * a.q_sh + d];
      Kn[r * ld + d] = a.k[t * a.k_st + kh * a.k_sh + d];
    }
    __syncthreads();
    // Normalize (one warp per row) and the gates of each token.
    for (int64_t r = warp; r < Cc; r += kThreads / kWarp) {
      float* qr = Qn + r * ld;
      float* kr = Kn + r * ld;
      float qf = q_scale, kf = 1.0f;
      if (a.qk_l2norm) {
        float qq = 0, kk = 0;
        for (int64_t d = lane; d < Dk; d += kWarp) {
          qq += qr[d] * qr[d];
          kk += kr[d] * kr[d];
        }
        qf *= 1.0f / sqrtf(cuda::mixer::warp_sum(qq) + a.eps);
        kf = 1.0f / sqrtf(cuda::mixer::warp_sum(kk) + a.eps);
      }
      __syncwarp();  // every lane has read the raw row
      for (int64_t d = lane; d < Dk; d += kWarp) {
        qr[d] *= qf;
        kr[d] *= kf;
      }
      if (lane == 0) {
        const int64_t t = t0 + r;
        gam[r] = neg_A * cuda::mixer::softplus(a.a[t * a.a_st + h * a.a_sh] + bias);
        beta[r] = 1.0f / (1.0f + expf(-a.b[t * a.b_st + h * a.b_sh]));
      }
    }
    __syncthreads();
    if (tid == 0) {  // γ: the inclusive cumsum in token order (as the CPU)
      float run = 0;
      for (int64_t i = 0; i < Cc; ++i) gam[i] = run += gam[i];
    }
    __syncthreads();
    // A (strictly lower) and the right-hand side diag(β)(V − diag(e^γ) K̂ S) for this block's columns.
    for (int64_t idx = tid; idx < Cc * Cc; idx += kThreads) {
      const int64_t i = idx / Cc, j = idx % Cc;
      float v = 0;
      if (j < i) {
        float dot = 0;
        for (int64_t d = 0; d < Dk; ++d) dot += Kn[i * ld + d] * Kn[j * ld + d];
        v = beta[i] * dot * expf(gam[i] - gam[j]);
      }
      A[i * Ce + j] = v;
    }
    for (int64_t i = s; i < Cc; i += kSlices) {
      float ks = 0;
      for (int64_t d = 0; d < Dk; ++d) ks += Kn[i * ld + d] * S[d * kCols + c];
      const float vi = col ? a.v[(t0 + i) * a.v_st + h * a.v_sh + j0 + c] : 0.0f;
      U[i * kCols + c] = beta[i] * (vi - expf(gam[i]) * ks);
    }
    __syncthreads();
    // V_new = (I + A)⁻¹ U, each column by forward substitution in token order.
    if (s == 0)
      for (int64_t i = 1; i < Cc; ++i) {
        float u = U[i * kCols + c];
        for (int64_t j = 0; j < i; ++j) u -= A[i * Ce + j] * U[j * kCols + c];
        U[i * kCols + c] = u;
      }
    __syncthreads();  // A is free
    for (int64_t idx = tid; idx < Cc * Cc; idx += kThreads) {
      const int64_t i = idx / Cc, j = idx % Cc;
      float v = 0;
      if (j <= i) {
        float dot = 0;
        for (int64_t d = 0; d < Dk; ++d) dot += Qn[i * ld + d] * Kn[j * ld + d];
        v = dot * expf(gam[i] - gam[j]);
      }
      A[i * Ce + j] = v;
    }
    __syncthreads();
    // o_i from the state carried in and the chunk's own tokens.
    for (int64_t i = s; i < Cc; i += kSlices) {
      float qs = 0;
      for (int64_t d = 0; d < Dk; ++d) qs += Qn[i * ld + d] * S[d * kCols + c];
      float o = expf(gam[i]) * qs;
      for (int64_t j = 0; j <= i; ++j) o += A[i * Ce + j] * U[j * kCols + c];
      if (col) a.out[(t0 + i) * a.o_st + h * a.o_sh + j0 + c] = o;
    }
    __syncthreads();  // every thread's reads of S are done
    // S ← e^{γ_last} S + Σ_j k̂_j e^{γ_last − γ_j} ⊗ V_new_j over the thread's own rows d ≡ s (mod kSlices).
    const float last = gam[Cc - 1], e_last = expf(last);
    for (int64_t d = s; d < Dk; d += kSlices) {
      float acc = 0;
      for (int64_t j = 0; j < Cc; ++j) acc += Kn[j * ld + d] * expf(last - gam[j]) * U[j * kCols + c];
      S[d * kCols + c] = e_last * S[d * kCols + c] + acc;
    }
  }
  if (col)  // the thread's own elements: no other thread wrote them since the last barrier
    for (int64_t d = s; d < Dk; d += kSlices) Sg[d * Dv] = S[d * kCols + c];
}

int64_t chunked_shared_bytes(const GatedDeltaNetArgs& a) {
  const int64_t Ce = a.C < a.T ? a.C : a.T;
  return 4 * (a.Dk * kCols + 2 * Ce * (a.Dk + 1) + Ce * Ce + Ce * kCols + 2 * Ce);
}

bool chunked(const GatedDeltaNetArgs& a) {
  return a.C > 0 && a.T > 1;
}

}  // namespace

// The kernel takes nothing from the pool (the parameters are read where they are stored).
int64_t CudaBackend::gated_deltanet_workspace(const GatedDeltaNetArgs&) const {
  return 0;
}

void CudaBackend::gated_deltanet(const GatedDeltaNetArgs& a) {
  enter();
  if (a.T == 0 || a.Hv == 0 || a.Dv == 0) return;
  const unsigned int blocks = cuda::mixer::grid_blocks(a.Hv * ((a.Dv + kCols - 1) / kCols), "gated_deltanet");
  if (chunked(a)) {  // T = 1 runs the recurrence in both forms, as on the CPU
    const int64_t smem = chunked_shared_bytes(a);
    cuda::mixer::allow_shared(gated_deltanet_chunked_kernel, smem, "gated_deltanet (chunked) shared memory");
    gated_deltanet_chunked_kernel<<<blocks, dim3(kCols, kSlices), static_cast<size_t>(smem), stream()>>>(a);
  } else {
    const int64_t smem = shared_bytes(a);
    cuda::mixer::allow_shared(gated_deltanet_kernel, smem, "gated_deltanet shared memory");
    gated_deltanet_kernel<<<blocks, dim3(kCols, kSlices), static_cast<size_t>(smem), stream()>>>(a);
  }
  cuda::check(cudaGetLastError(), "gated_deltanet launch");
}

}  // namespace keel
