// CUDA norms: RMSNorm, the gated RMSNorm of Mamba2 / Gated DeltaNet (per group of channels), L2 norm. One
// block of kThreads per row (or per group of a row); the rows' loop strides over the grid.
//
// Numerics as the CPU (backend/cpu/norm.cpp): Σx² in double (each thread's strided partial sum in double,
// then block_sum in double: a fixed order for a fixed block size, so a row's result does not depend on the
// other rows), var = f32(Σ / divisor), r = 1.0f / sqrtf(var + eps) in f32 (IEEE sqrt and division: nvcc's
// defaults), y = (x·r)·w or (x·r)·(1 + w).
//
// Aliasing: out may be x (and z for gate_then_norm): every element is read and written by the same thread,
// and the reduction that needs the whole row is complete before any thread writes.
//
// A decode step's row is one block's work (2688 floats: ~11 per thread): the row loops issue their loads in
// rounds (cuda::strided), each thread's elements still in ascending order.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"

namespace keel {

namespace {

// A thread's elements of a row: threadIdx.x, + blockDim.x, … < n.
template <class Load, class Use>
__device__ inline void row_loop(int64_t n, Load load, Use use) {
  cuda::strided(threadIdx.x, n, blockDim.x, load, use);
}

// 1 / sqrt(Σ x[i]² / divisor + eps) over x[0, n), for every thread of the block.
__device__ float block_inv_rms(const float* x, int64_t n, int64_t divisor, float eps) {
  double s = 0;
  row_loop(
      n, [&](int64_t i) { return x[i]; }, [&](int64_t, float v) { s += static_cast<double>(v) * v; });
  s = cuda::block_sum(s);
  const float var = static_cast<float>(s / static_cast<double>(divisor));
  return 1.0f / sqrtf(var + eps);
}

// (x·r)·w (or ·(1 + w)), the CPU's scale_by_weight; wi = w[w_offset + i] as stored, widened.
__device__ inline float scaled_by(float x, float r, const NormWeight& w, float wi) {
  return (x * r) * (w.one_plus ? 1.0f + wi : wi);
}
__device__ inline float scaled(float x, float r, const NormWeight& w, int64_t i) {
  return scaled_by(x, r, w, cuda::norm_weight_at(w, i));
}

__global__ void rms_norm_kernel(RmsNormArgs a) {
  cuda::pdl_begin();
  const int64_t n = a.x.n;
  for (int64_t r = blockIdx.x; r < a.x.rows; r += gridDim.x) {
    const float* x = a.x.row(r);
    float* y = a.out.row(r);
    const float inv = block_inv_rms(x, n, n, a.eps);
    row_loop(
        n, [&](int64_t i) { return make_float2(x[i], cuda::norm_weight_at(a.w, i)); },
        [&](int64_t i, float2 v) { y[i] = scaled_by(v.x, inv, a.w, v.y); });
  }
}

// One block per (row, group): item = row · groups + group. The weight is [n] (indexed by channel) or
// [group] (shared by every group).
__global__ void gated_rms_norm_kernel(GatedRmsNormArgs a) {
  cuda::pdl_begin();
  const int64_t n = a.x.n, g = a.group, groups = n / g;
  for (int64_t item = blockIdx.x; item < a.x.rows * groups; item += gridDim.x) {
    const int64_t r = item / groups, g0 = (item % groups) * g;
    const float* x = a.x.row(r) + g0;
    const float* z = a.z.row(r) + g0;
    float* y = a.out.row(r) + g0;
    const int64_t w0 = a.w.size == n ? g0 : 0;
    if (a.order == GateOrder::gate_then_norm) {
      // v = silu(z)·x (stored in y, f32), then v normalized over the group.
      double s = 0;
      for (int64_t i = threadIdx.x; i < g; i += blockDim.x) {
        const float v = cuda::silu(z[i]) * x[i];
        y[i] = v;
        s += static_cast<double>(v) * v;
      }
      s = cuda::block_sum(s);
      const float inv = 1.0f / sqrtf(static_cast<float>(s / static_cast<double>(g)) + a.eps);
      for (int64_t i = threadIdx.x; i < g; i += blockDim.x) y[i] = scaled(y[i], inv, a.w, w0 + i);
    } else {
      // x normalized over the group, then ·silu(z).
      const float inv = block_inv_rms(x, g, g, a.eps);
      for (int64_t i = threadIdx.x; i < g; i += blockDim.x) {
        const float v = scaled(x[i], inv, a.w, w0 + i);
        y[i] = cuda::silu(z[i]) * v;
      }
    }
  }
}

__global__ void l2_norm_kernel(L2NormArgs a) {
  cuda::pdl_begin();
  const int64_t n = a.x.n;
  for (int64_t r = blockIdx.x; r < a.x.rows; r += gridDim.x) {
    const float* x = a.x.row(r);
    float* y = a.out.row(r);
    const float inv = block_inv_rms(x, n, 1, a.eps);
    row_loop(
        n, [&](int64_t i) { return x[i]; }, [&](int64_t i, float v) { y[i] = v * inv; });
  }
}

}  // namespace

void CudaBackend::rms_norm(const RmsNormArgs& a) {
  enter();
  if (a.x.rows == 0 || a.x.n == 0) return;
  cuda::launch(rms_norm_kernel, cuda::grid_blocks(a.x.rows), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "rms_norm launch");
}

void CudaBackend::gated_rms_norm(const GatedRmsNormArgs& a) {
  enter();
  if (a.x.rows == 0 || a.x.n == 0 || a.group <= 0) return;
  cuda::launch(gated_rms_norm_kernel, cuda::grid_blocks(a.x.rows * (a.x.n / a.group)), cuda::kThreads, 0,
               stream(), a);
  cuda::check(cudaGetLastError(), "gated_rms_norm launch");
}

void CudaBackend::l2_norm(const L2NormArgs& a) {
  enter();
  if (a.x.rows == 0 || a.x.n == 0) return;
  cuda::launch(l2_norm_kernel, cuda::grid_blocks(a.x.rows), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "l2_norm launch");
}

}  // namespace keel
