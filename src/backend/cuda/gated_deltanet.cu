// Gated DeltaNet on CUDA (math: ops/gated_deltanet.h; the CPU kernel: backend/cpu/gated_deltanet.cpp; the
// float64 reference: ops/reference/gated_deltanet_ref.h). The recurrent form, token by token at every T
// (value head h, key head h / (Hv / Hk), S [Dk, Dv] f32):
//   q ← q·rsqrt(Σq² + eps)/√Dk, k ← k·rsqrt(Σk² + eps) (qk_l2norm; the 1/√Dk always), β = σ(b),
//   g = −exp(A_log)·softplus(a + dt_bias);  v' = β(v − e^g·Sᵀk);  S ← e^g·S + k v'ᵀ;  o = Sᵀq
// as the CPU computes it (Sᵀk from the state before the decay, scaled by e^g). One block per (value head,
// slice of kCols columns of S): thread (c, s) owns the elements S[d][c] with d ≡ s (mod kSlices) in shared
// memory for the whole call (read once, written back once); Sᵀk and Sᵀq are reduced over the kSlices slices
// through shared memory. No workspace. The chunked WY form (C > 0 at T > 1) is not implemented here: it is
// refused as Error(unsupported), never approximated.
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
  if (chunked(a))  // T = 1 runs the recurrence in both forms, as on the CPU
    throw_error(ErrorCode::unsupported,
                "gated_deltanet: the chunked (WY) form (chunk_size {}, T = {}) is not implemented on CUDA; "
                "the recurrent form is",
                a.C, a.T);
  const int64_t blocks = a.Hv * ((a.Dv + kCols - 1) / kCols), smem = shared_bytes(a);
  cuda::mixer::allow_shared(gated_deltanet_kernel, smem, "gated_deltanet shared memory");
  gated_deltanet_kernel<<<cuda::mixer::grid_blocks(blocks, "gated_deltanet"), dim3(kCols, kSlices),
                          static_cast<size_t>(smem), stream()>>>(a);
  cuda::check(cudaGetLastError(), "gated_deltanet launch");
}

}  // namespace keel
