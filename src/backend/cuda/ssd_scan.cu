// Mamba2 SSD scan on CUDA (math: ops/ssd_scan.h; the CPU kernel: backend/cpu/ssd_scan.cpp; the float64
// reference: ops/reference/ssd_scan_ref.h). The recurrence, token by token at every T:
//   S[h] ← e^{dt·A[h]}·S[h] + dt·x[t,h] ⊗ B[t,g];  y[t,h] = S[h]·C[t,g] + D[h]·x[t,h]
// One block per (head h, slice of kRows rows p of S[h] [P, N]): the slice lives in shared memory for the
// whole call (read once, written back once), each warp owns kRows / 4 of its rows (lanes across N), and the
// block walks the T tokens in order, staging kStage tokens' B and C rows in shared memory at a time. No
// workspace: A = −exp(A_log), dt_bias and D are read from the parameter vectors on the device. Memory is flat
// in T.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
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
  for (int64_t i = threadIdx.x; i < rows * N; i += kThreads) S[i] = Sg[i];
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
  for (int64_t i = threadIdx.x; i < rows * N; i += kThreads) Sg[i] = S[i];
}

int64_t shared_bytes(const SsdScanArgs& a) {
  return 4 * ((kRows + 2 * kStage) * a.N + 2 * kStage);
}

}  // namespace

// The kernel takes nothing from the pool (the parameters are read where they are stored).
int64_t CudaBackend::ssd_scan_workspace(const SsdScanArgs&) const {
  return 0;
}

void CudaBackend::ssd_scan(const SsdScanArgs& a) {
  enter();
  if (a.T == 0 || a.H == 0 || a.P == 0) return;
  const int64_t blocks = a.H * ((a.P + kRows - 1) / kRows), smem = shared_bytes(a);
  cuda::mixer::allow_shared(ssd_scan_kernel, smem, "ssd_scan shared memory");
  ssd_scan_kernel<<<cuda::mixer::grid_blocks(blocks, "ssd_scan"), kThreads, static_cast<size_t>(smem),
                    stream()>>>(a);
  cuda::check(cudaGetLastError(), "ssd_scan launch");
}

}  // namespace keel
