// Gated DeltaNet on CUDA (math: ops/gated_deltanet.h; the CPU kernel: backend/cpu/gated_deltanet.cpp; the
// float64 reference: ops/reference/gated_deltanet_ref.h). The recurrent form, token by token at every T
// (value head h, key head h / (Hv / Hk), S [Dk, Dv] f32):
//   q ← q·rsqrt(Σq² + eps)/√Dk, k ← k·rsqrt(Σk² + eps) (qk_l2norm; the 1/√Dk always), β = σ(b),
//   g = −exp(A_log)·softplus(a + dt_bias);  v' = β(v − e^g·Sᵀk);  S ← e^g·S + k v'ᵀ;  o = Sᵀq
// as the CPU computes it (Sᵀk from the state before the decay, scaled by e^g). One block per (value head,
// slice of kCols columns of S): thread (c, s) owns the elements S[d][c] with d ≡ s (mod kSlices) in shared
// memory for the whole call (read once, written back once); Sᵀk and Sᵀq are reduced over the kSlices slices
// through shared memory. The chunked WY form (C > 0 at T > 1) below it. No workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/mixer_util.cuh"

namespace keel {

namespace {

using cuda::mixer::kWarp;

constexpr int kCols = 32;   // columns j of S per block: threadIdx.x (one warp wide)
constexpr int kSlices = 4;  // slices of the Dk rows: threadIdx.y
constexpr int kThreads = kCols * kSlices;

// Grid: Hv · ⌈Dv / kCols⌉ blocks, head-major; block (kCols, kSlices). Dynamic shared memory (floats):
// S [Dk, kCols], q and k rows [Dk] each (raw), the partial sums [kSlices, kCols], v' [kCols], norms [2].
__global__ void __launch_bounds__(kThreads) gated_deltanet_kernel(const GatedDeltaNetArgs a) {
  extern __shared__ float smem[];
  const int64_t Dk = a.Dk, Dv = a.Dv, col_blocks = (Dv + kCols - 1) / kCols;
  const int64_t h = blockIdx.x / col_blocks, j0 = blockIdx.x % col_blocks * kCols;
  const int64_t kh = h / (a.Hv / a.Hk);
  const int c = threadIdx.x, s = threadIdx.y, tid = s * kCols + c;
  const bool col = j0 + c < Dv;
  float* S = smem;                    // [Dk, kCols]: S[h][d][j0 + c]
  float* qr = S + Dk * kCols;         // [Dk] q[t, kh] as stored
  float* kr = qr + Dk;                // [Dk] k[t, kh] as stored
  float* red = kr + Dk;               // [kSlices, kCols] per-slice partial sums
  float* vp = red + kSlices * kCols;  // [kCols] v'
  float* norm = vp + kCols;           // [2] Σq², Σk²
  // Column j0 + c of S[h] in state [Hv, Dk, Dv]: rows Dv floats apart.
  float* Sg = a.state + h * Dk * Dv + j0 + c;
  if (col)
    for (int64_t d = s; d < Dk; d += kSlices) S[d * kCols + c] = Sg[d * Dv];
  const float neg_A = -expf(cuda::mixer::param(a.A_log, h)), bias = cuda::mixer::param(a.dt_bias, h);
  const float q_scale = 1.0f / sqrtf(static_cast<float>(Dk));
  for (int64_t t = 0; t < a.T; ++t) {
    __syncthreads();  // the previous token's reads of q, k, red and norm are done
    const float* qt = a.q + t * a.q_st + kh * a.q_sh;
    const float* kt = a.k + t * a.k_st + kh * a.k_sh;
    for (int64_t d = tid; d < Dk; d += kThreads) {
      qr[d] = qt[d];
      kr[d] = kt[d];
    }
    __syncthreads();
    if (a.qk_l2norm && s < 2) {  // warp 0: Σq², warp 1: Σk²
      const float* row = s == 0 ? qr : kr;
      float ss = 0;
      for (int64_t d = c; d < Dk; d += kWarp) ss += row[d] * row[d];
      ss = cuda::mixer::warp_sum(ss);
      if (c == 0) norm[s] = ss;
    }
    __syncthreads();
    // The factors the CPU's normalize() multiplies by: q·qf and k·kf are its rows qn and kn.
    const float qf = a.qk_l2norm ? q_scale * (1.0f / sqrtf(norm[0] + a.eps)) : q_scale;
    const float kf = a.qk_l2norm ? 1.0f / sqrtf(norm[1] + a.eps) : 1.0f;
    const float x = a.a[t * a.a_st + h * a.a_sh] + bias;
    const float e = expf(neg_A * cuda::mixer::softplus(x));
    const float beta = 1.0f / (1.0f + expf(-a.b[t * a.b_st + h * a.b_sh]));
    // Sᵀk of the state before the decay, this thread's slice of the rows.
    float part = 0;
    if (col)
      for (int64_t d = s; d < Dk; d += kSlices) part += (kr[d] * kf) * S[d * kCols + c];
    red[s * kCols + c] = part;
    __syncthreads();
    if (s == 0) {
      float kv = 0;
      for (int i = 0; i < kSlices; ++i) kv += red[i * kCols + c];
      vp[c] = col ? beta * (a.v[t * a.v_st + h * a.v_sh + j0 + c] - e * kv) : 0.0f;
    }
    __syncthreads();
    // S ← e·S + k v'ᵀ and this slice's part of o = Sᵀq, over the thread's own elements.
    const float vc = vp[c];
    part = 0;
    if (col)
      for (int64_t d = s; d < Dk; d += kSlices) {
        const float sv = e * S[d * kCols + c] + (kr[d] * kf) * vc;
        S[d * kCols + c] = sv;
        part += (qr[d] * qf) * sv;
      }
    red[s * kCols + c] = part;  // Sᵀk's partial sums were read before the last barrier
    __syncthreads();
    if (s == 0 && col) {
      float o = 0;
      for (int i = 0; i < kSlices; ++i) o += red[i * kCols + c];
      a.out[t * a.o_st + h * a.o_sh + j0 + c] = o;
    }
  }
  if (col)  // the thread's own elements: no other thread wrote them
    for (int64_t d = s; d < Dk; d += kSlices) Sg[d * Dv] = S[d * kCols + c];
}

int64_t shared_bytes(const GatedDeltaNetArgs& a) {
  return 4 * (a.Dk * kCols + 2 * a.Dk + kSlices * kCols + kCols + 2);
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
