// Gated DeltaNet on CUDA (math: ops/gated_deltanet.h; the CPU kernel: backend/cpu/gated_deltanet.cpp; the
// float64 reference: ops/reference/gated_deltanet_ref.h). The recurrent form, token by token at every T
// (value head h, key head h / (Hv / Hk), S [Dk, Dv] f32):
//   q ← q·rsqrt(Σq² + eps)/√Dk, k ← k·rsqrt(Σk² + eps) (qk_l2norm; the 1/√Dk always), β = σ(b),
//   g = −exp(A_log)·softplus(a + dt_bias);  v' = β(v − e^g·Sᵀk);  S ← e^g·S + k v'ᵀ;  o = Sᵀq
// as the CPU computes it (Sᵀk from the state before the decay, scaled by e^g). The recurrence: one block per
// (value head, kRCols columns of S), its state slice in registers for the whole call (read and written once,
// through shared memory so that the global accesses are whole rows of the slice). The chunked WY form (C > 0
// at T > 1) below it. No workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/mixer_util.cuh"

namespace keel {

namespace {

using cuda::mixer::kWarp;

// ---- the recurrence ----
// Grid: Hv · ⌈Dv / kRCols⌉ blocks, head-major; 128 threads, 4 warps. Warp w owns columns j0 + 2w and
// j0 + 2w + 1; lane (cl, s) = (lane % 2, lane / 2) owns column c = 2w + cl at the kPer rows d = kPer·s + i,
// in registers. Sᵀk and Sᵀq are the lane's kPer products summed in d order, then over the 16 slices by a
// fixed butterfly (four shuffles): a token needs no block barrier, and its arithmetic does not depend on
// where a call starts or ends (pieces == whole, bitwise). The block stages kRStage tokens at a time: their q
// and k rows normalized (q̂ = q·qf, k̂ = k·kf, the CPU's rounded products) by the warp that loads them and
// zero-padded to Dp = 16·kPer (a zero row of S stays zero: no bounds in the token loop), v of its columns,
// e^g and β. (It replaced a block of 32 columns × 4 slices with S in shared memory: 128 blocks of 4 warps
// on the Qwen3.5 shape, each token two 32-long dependent chains and a global load of v: 1,352 µs a layer at
// 1K tokens then, docs/CUDA.md.)
constexpr int kRThreads = 128;
constexpr int kRWarps = kRThreads / kWarp;
constexpr int kRSlices = 16;                     // row slices: lanes per column
constexpr int kRColsPerWarp = kWarp / kRSlices;  // 2
constexpr int kRCols = kRColsPerWarp * kRWarps;  // 8 columns per block
constexpr int kRStage = 32;                      // tokens staged per barrier pair
constexpr int kRSlabLd = kRCols + 1;             // the state slab's row stride (floats)
constexpr int kRMaxPer = 32;                     // Dk ≤ kRSlices · kRMaxPer = 512

// The lane's kPer floats of a shared row at `p` (16-byte aligned when kPer is a multiple of 4).
template <int kPer>
__device__ __forceinline__ void load_rows(const float* p, float (&v)[kPer]) {
  if constexpr (kPer % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kPer; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(p + i);
      v[i] = f.x, v[i + 1] = f.y, v[i + 2] = f.z, v[i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPer; ++i) v[i] = p[i];
  }
}

// Dynamic shared memory (floats): q̂, k̂ [kRStage, Dp] each, v [kRStage, kRCols], e^g, β [kRStage] each.
// Before the first stage and after the last, the state slab [Dk, kRSlabLd] over q̂ and k̂.
template <int kPer>
__global__ void __launch_bounds__(kRThreads) gated_deltanet_kernel(const GatedDeltaNetArgs a) {
  cuda::pdl_begin();
  extern __shared__ __align__(16) float smem[];
  constexpr int kDp = kRSlices * kPer, kM = (kDp + kWarp - 1) / kWarp;  // a lane's elements of a staged row
  const int64_t Dk = a.Dk, Dv = a.Dv, col_blocks = (Dv + kRCols - 1) / kRCols;
  const int64_t h = blockIdx.x / col_blocks, j0 = blockIdx.x % col_blocks * kRCols;
  const int64_t kh = h / (a.Hv / a.Hk);
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int c = warp * kRColsPerWarp + lane % kRColsPerWarp, s = lane / kRColsPerWarp;
  const int ncols = static_cast<int>(Dv - j0 < kRCols ? Dv - j0 : kRCols);
  float* qs = smem;                      // [kRStage, kDp]: q̂ of token t0 + j
  float* ks = qs + kRStage * kDp;        // [kRStage, kDp]: k̂
  float* vs = ks + kRStage * kDp;        // [kRStage, kRCols]: v[t0 + j, h, j0 + c]
  float* decay = vs + kRStage * kRCols;  // e^g
  float* beta = decay + kRStage;         // β
  float* slab = smem;                    // [Dk, kRSlabLd]: S[h][d][j0 + c], only outside the stages
  // S[h] [Dk, Dv] in state [Hv, Dk, Dv]; this block's columns j0 … j0 + ncols − 1.
  float* Sg = a.state + h * Dk * Dv + j0;
  cuda::strided(
      tid, Dk * kRCols, kRThreads,
      [&](int64_t i) { return i % kRCols < ncols ? Sg[i / kRCols * Dv + i % kRCols] : 0.0f; },
      [&](int64_t i, float v) { slab[i / kRCols * kRSlabLd + i % kRCols] = v; });
  __syncthreads();
  float S[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) S[i] = kPer * s + i < Dk ? slab[(kPer * s + i) * kRSlabLd + c] : 0.0f;
  const float neg_A = -expf(cuda::mixer::param(a.A_log, h)), bias = cuda::mixer::param(a.dt_bias, h);
  const float q_scale = 1.0f / sqrtf(static_cast<float>(Dk));
  for (int64_t t0 = 0; t0 < a.T; t0 += kRStage) {
    const int nt = static_cast<int>(a.T - t0 < kRStage ? a.T - t0 : kRStage);
    __syncthreads();  // the previous stage's (or the slab's) reads are done
    // Rows r ≡ warp (mod 4), two at a time (both rows' loads in flight together): lane holds d = lane + 32·m;
    // the sums of squares in d order over the lane, then the warp's butterfly; the factors the CPU's
    // normalize() multiplies by.
    for (int r0 = warp; r0 < nt; r0 += 2 * kRWarps) {
      float qv[2][kM], kv[2][kM];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int64_t t = t0 + r0 + u * kRWarps;
        const bool live = r0 + u * kRWarps < nt;
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          const int64_t d = lane + kWarp * m;
          qv[u][m] = live && d < Dk ? a.q[t * a.q_st + kh * a.q_sh + d] : 0.0f;
          kv[u][m] = live && d < Dk ? a.k[t * a.k_st + kh * a.k_sh + d] : 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int r = r0 + u * kRWarps;
        float qq = 0, kk = 0;
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          qq += qv[u][m] * qv[u][m];
          kk += kv[u][m] * kv[u][m];
        }
        qq = cuda::mixer::warp_sum(qq);
        kk = cuda::mixer::warp_sum(kk);
        const float fq = a.qk_l2norm ? q_scale * (1.0f / sqrtf(qq + a.eps)) : q_scale;
        const float fk = a.qk_l2norm ? 1.0f / sqrtf(kk + a.eps) : 1.0f;
        if (r < nt)
#pragma unroll
          for (int m = 0; m < kM; ++m)
            if (const int d = lane + kWarp * m; d < kDp) {
              qs[r * kDp + d] = qv[u][m] * fq;
              ks[r * kDp + d] = kv[u][m] * fk;
            }
      }
    }
    for (int i = tid; i < nt * kRCols; i += kRThreads) {
      const int j = i / kRCols, cc = i % kRCols;
      vs[i] = cc < ncols ? a.v[(t0 + j) * a.v_st + h * a.v_sh + j0 + cc] : 0.0f;
    }
    if (tid < nt) {
      const int64_t t = t0 + tid;
      decay[tid] = expf(neg_A * cuda::mixer::softplus(a.a[t * a.a_st + h * a.a_sh] + bias));
      beta[tid] = 1.0f / (1.0f + expf(-a.b[t * a.b_st + h * a.b_sh]));
    }
    __syncthreads();
    for (int j = 0; j < nt; ++j) {
      float kr[kPer], qr[kPer];
      load_rows<kPer>(ks + j * kDp + kPer * s, kr);
      const float e = decay[j];
      // Sᵀk of the state before the decay: the lane's rows, then over the 16 slices of column c.
      float part = 0;
#pragma unroll
      for (int i = 0; i < kPer; ++i) part += kr[i] * S[i];
#pragma unroll
      for (int m = kRColsPerWarp; m < kWarp; m *= 2) part += __shfl_xor_sync(0xffffffffu, part, m);
      const float vp = beta[j] * (vs[j * kRCols + c] - e * part);
      // S ← e·S + k̂ v'ᵀ and o = Sᵀq̂ over the lane's rows, then over the slices.
      load_rows<kPer>(qs + j * kDp + kPer * s, qr);
      float o = 0;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        S[i] = e * S[i] + kr[i] * vp;
        o += qr[i] * S[i];
      }
#pragma unroll
      for (int m = kRColsPerWarp; m < kWarp; m *= 2) o += __shfl_xor_sync(0xffffffffu, o, m);
      if (s == 0 && c < ncols) a.out[(t0 + j) * a.o_st + h * a.o_sh + j0 + c] = o;
    }
  }
  __syncthreads();  // the last stage's reads of q̂ and k̂ are done: the slab may take their place
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    if (kPer * s + i < Dk) slab[(kPer * s + i) * kRSlabLd + c] = S[i];
  __syncthreads();
  for (int64_t i = tid; i < Dk * kRCols; i += kRThreads)
    if (i % kRCols < ncols) Sg[i / kRCols * Dv + i % kRCols] = slab[i / kRCols * kRSlabLd + i % kRCols];
}

// The rows of S a lane holds for Dk: the power of two ≥ ⌈Dk / 16⌉ (the kernels are built for 1 … 32).
int rows_per_lane(int64_t Dk) {
  int per = 1;
  while (per * kRSlices < Dk) per *= 2;
  if (per > kRMaxPer)
    throw_error(ErrorCode::unsupported, "gated_deltanet: key head width {} exceeds the CUDA kernel's {}", Dk,
                kRSlices * kRMaxPer);
  return per;
}

int64_t shared_bytes(const GatedDeltaNetArgs& a) {
  const int64_t dp = kRSlices * rows_per_lane(a.Dk);
  const int64_t stage = 2 * kRStage * dp + kRStage * kRCols + 2 * kRStage, slab = a.Dk * kRSlabLd;
  return 4 * (stage > slab ? stage : slab);
}

using RecurrenceKernel = void (*)(GatedDeltaNetArgs);
RecurrenceKernel recurrence_kernel(int64_t Dk) {
  switch (rows_per_lane(Dk)) {
    case 1:
      return gated_deltanet_kernel<1>;
    case 2:
      return gated_deltanet_kernel<2>;
    case 4:
      return gated_deltanet_kernel<4>;
    case 8:
      return gated_deltanet_kernel<8>;
    case 16:
      return gated_deltanet_kernel<16>;
    default:
      return gated_deltanet_kernel<kRMaxPer>;
  }
}

// ---- the chunked WY form ----
// (op-tested on CUDA, not used by the models; one block per (value head, kCols columns of S), threadIdx.x
// the column, threadIdx.y the row slice)
constexpr int kCols = 32;
constexpr int kSlices = 4;
constexpr int kThreads = kCols * kSlices;

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
  cuda::pdl_begin();
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
  if (chunked(a)) {  // T = 1 runs the recurrence in both forms, as on the CPU
    const unsigned int blocks =
        cuda::mixer::grid_blocks(a.Hv * ((a.Dv + kCols - 1) / kCols), "gated_deltanet");
    const int64_t smem = chunked_shared_bytes(a);
    cuda::mixer::allow_shared(gated_deltanet_chunked_kernel, smem, "gated_deltanet (chunked) shared memory");
    cuda::launch(gated_deltanet_chunked_kernel, blocks, dim3(kCols, kSlices), static_cast<size_t>(smem),
                 stream(), a);
  } else {
    const unsigned int blocks =
        cuda::mixer::grid_blocks(a.Hv * ((a.Dv + kRCols - 1) / kRCols), "gated_deltanet");
    const RecurrenceKernel kernel = recurrence_kernel(a.Dk);
    const int64_t smem = shared_bytes(a);
    cuda::mixer::allow_shared(kernel, smem, "gated_deltanet shared memory");
    cuda::launch(kernel, blocks, kRThreads, static_cast<size_t>(smem), stream(), a);
  }
  cuda::check(cudaGetLastError(), "gated_deltanet launch");
}

}  // namespace keel
