// CUDA MoE routing, grouping, combine and the shared expert's gate (ops/moe.h states the math; the grouped
// expert matmul is matmul.cu's). Routing is a warp per token, its lane 0 running the CPU's algorithm
// (backend/cpu/moe.cpp) step for step on the row in shared memory: the same insertion top-k (descending
// score, the lower index first on equal scores, NaN never ranked above anything), the same f32 sums in the
// same order. The router bias is read in its stored dtype, so routing takes no workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/topk.h"
#include "core/error.h"

namespace keel {

namespace {

using topk::offer;
using topk::Pick;

// softmax_topk: rank by logit (softmax is monotonic), weights exp(l − max) / Σ over the picks. l: the
// token's logits [E] in shared memory.
__device__ void route_softmax(const MoeRouteArgs& a, const float* l, int32_t* idx, float* w) {
  Pick top[kMoeMaxTopK];
  int64_t n = 0;
  float lmax = l[0];
  for (int64_t e = 0; e < a.E; ++e) {
    lmax = l[e] > lmax ? l[e] : lmax;
    offer(top, n, a.top_k, l[e], static_cast<int32_t>(e));
  }
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (w[j] = expf(top[j].score - lmax));
  for (int64_t j = 0; j < n; ++j) w[j] /= sum, idx[j] = top[j].index;
}

// sigmoid_grouped: choice = sigmoid(l) + bias; groups scored by their two best choices, the topk_group best
// kept; top_k by choice among them; weights the unbiased sigmoids, / (Σ + 1e-20) when norm_topk_prob,
// ·scaling. sig, choice: the token's sigmoid(l) and choices [E] in shared memory.
__device__ void route_sigmoid_grouped(const MoeRouteArgs& a, const float* sig, const float* choice,
                                      int32_t* idx, float* w) {
  bool allowed[kMoeMaxGroups];
  const int64_t per_group = a.E / a.n_group;
  if (a.n_group > 1) {
    Pick groups[kMoeMaxGroups];
    int64_t n_groups = 0;
    for (int64_t g = 0; g < a.n_group; ++g) {
      Pick best2[2];
      int64_t n2 = 0;
      for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e)
        offer(best2, n2, 2, choice[e], static_cast<int32_t>(e));
      offer(groups, n_groups, a.topk_group, best2[0].score + best2[1].score, static_cast<int32_t>(g));
      allowed[g] = false;
    }
    for (int64_t j = 0; j < n_groups; ++j) allowed[groups[j].index] = true;
  }
  Pick top[kMoeMaxTopK];
  int64_t n = 0;
  for (int64_t e = 0; e < a.E; ++e)
    if (a.n_group <= 1 || allowed[e / per_group]) offer(top, n, a.top_k, choice[e], static_cast<int32_t>(e));
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (w[j] = sig[top[j].index]);  // unbiased scores
  const float norm = a.norm_topk_prob ? 1.0f / (sum + 1e-20f) : 1.0f;
  for (int64_t j = 0; j < n; ++j) w[j] = w[j] * norm * a.scaling, idx[j] = top[j].index;
}

// A warp per token t (logits row t at logits + t·logits_st floats; indices/weights rows [top_k]): the lanes
// bring the row into shared memory (sigmoid_grouped: its sigmoids and choices, each element's f32 formula,
// the same bits whichever thread computes it), then lane 0 runs the CPU's algorithm on it. One thread per
// token reading the row from global memory, load after dependent load, spent 45 µs per decode step's
// routing (ncu, H200, 128 experts).
constexpr int kRouteWarps = 4;
__global__ void __launch_bounds__(32 * kRouteWarps) moe_route_kernel(MoeRouteArgs a) {
  __shared__ float row[kRouteWarps][kMoeMaxExperts], sig[kRouteWarps][kMoeMaxExperts];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool has_bias = a.bias.data != nullptr;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kRouteWarps + warp; t < a.T;
       t += static_cast<int64_t>(gridDim.x) * kRouteWarps) {
    const float* l = a.logits + t * a.logits_st;
    for (int64_t e = lane; e < a.E; e += 32) {
      if (a.sigmoid_grouped) {
        sig[warp][e] = cuda::sigmoid(l[e]);
        row[warp][e] = sig[warp][e] + (has_bias ? cuda::param_at(a.bias, e) : 0.0f);  // the choice
      } else {
        row[warp][e] = l[e];
      }
    }
    __syncwarp();
    if (lane == 0) {
      int32_t* idx = a.indices + t * a.top_k;
      float* w = a.weights + t * a.top_k;
      if (a.sigmoid_grouped)
        route_sigmoid_grouped(a, sig[warp], row[warp], idx, w);
      else
        route_softmax(a, row[warp], idx, w);
    }
    __syncwarp();  // the row is read before the next token overwrites it
  }
}

// The stable counting sort of MoeGroupArgs (kernel_args.h) in one block of kGroupThreads: a histogram of
// the experts (shared atomics), their exclusive scan (offsets), then the pairs in rounds of one pair per
// thread, ascending: a pair's grouped row is its expert's cursor + the pairs of the same expert in earlier
// warps of the round (per-warp counts in shared memory) + those in earlier lanes of its warp
// (__match_any_sync). Pairs outside [0, E) get position −1. Reference: backend/moe_host.h group().
constexpr int kGroupThreads = 512, kGroupWarps = kGroupThreads / 32;
__global__ void __launch_bounds__(kGroupThreads) moe_group_kernel(MoeGroupArgs a) {
  __shared__ int cursor[kMoeMaxExperts];
  __shared__ int warp_count[kGroupWarps * kMoeMaxExperts];  // [warp][expert], 0 outside a round
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int E = static_cast<int>(a.E);
  const int64_t R = a.T * a.k;
  for (int e = tid; e < E; e += kGroupThreads) cursor[e] = 0;
  for (int i = tid; i < kGroupWarps * E; i += kGroupThreads) warp_count[i] = 0;
  __syncthreads();
  for (int64_t p = tid; p < R; p += kGroupThreads) {
    const int e = a.indices[p];
    if (e >= 0 && e < E) atomicAdd(&cursor[e], 1);
  }
  __syncthreads();
  if (tid == 0) {
    int run = 0;
    for (int e = 0; e < E; ++e) {
      const int c = cursor[e];
      a.offsets[e] = run, cursor[e] = run;
      run += c;
    }
    a.offsets[E] = run;
  }
  __syncthreads();
  for (int64_t base = 0; base < R; base += kGroupThreads) {
    const int64_t p = base + tid;
    int e = p < R ? a.indices[p] : -1;
    const bool valid = e >= 0 && e < E;
    if (!valid) e = -1;
    const unsigned peers = __match_any_sync(0xffffffffu, e);
    const int rank = __popc(peers & ((1u << lane) - 1u)), count = __popc(peers);
    if (valid && rank == 0) warp_count[warp * E + e] = count;
    __syncthreads();
    if (valid) {
      int before = cursor[e] + rank;
      for (int w = 0; w < warp; ++w) before += warp_count[w * E + e];
      a.token[before] = static_cast<int32_t>(p / a.k);
      a.position[p] = before;
    } else if (p < R) {
      a.position[p] = -1;
    }
    __syncthreads();
    if (valid && rank == 0) {
      atomicAdd(&cursor[e], count);
      warp_count[warp * E + e] = 0;
    }
    __syncthreads();
  }
}

// MoeCombineArgs: blocks over (a token's elements along x, tokens along y); the first thread orders the
// token's slots by position into shared memory, then each thread adds them into its elements in that order,
// each product rounded before its sum (the CPU's d += c·s; __fmul_rn/__fadd_rn are never fused).
__global__ void moe_combine_kernel(MoeCombineArgs a) {
  __shared__ int pos[kMoeMaxTopK];
  __shared__ float wt[kMoeMaxTopK];
  __shared__ int n;
  for (int64_t t = blockIdx.y; t < a.T; t += gridDim.y) {
    __syncthreads();  // the previous token's slots are no longer read
    if (threadIdx.x == 0) {
      int m = 0;
      for (int64_t j = 0; j < a.k; ++j) {
        const int p = a.position[t * a.k + j];
        if (p < 0) continue;
        int at = m++;
        for (; at > 0 && pos[at - 1] > p; --at) pos[at] = pos[at - 1], wt[at] = wt[at - 1];
        pos[at] = p, wt[at] = a.weights[t * a.k + j];
      }
      n = m;
    }
    __syncthreads();
    float* d = a.out + t * a.out_st;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.H;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      float v = d[i];
      for (int j = 0; j < n; ++j) v = __fadd_rn(v, __fmul_rn(wt[j], a.y[pos[j] * a.y_st + i]));
      d[i] = v;
    }
  }
}

// ScaleRowsArgs: blocks over (a row's elements along x, rows along y).
__global__ void scale_rows_kernel(ScaleRowsArgs a) {
  for (int64_t r = blockIdx.y; r < a.n; r += gridDim.y) {
    float* d = a.dst + r * a.dst_st;
    const float c = a.scale[r];
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.width;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
      d[i] *= c;
  }
}

}  // namespace

int64_t CudaBackend::moe_route_workspace(const MoeRouteArgs&) const {
  return 0;  // the bias is read as stored
}

void CudaBackend::moe_route(const MoeRouteArgs& a) {
  enter();
  if (a.T == 0 || a.E == 0) return;
  if (a.E > kMoeMaxExperts)
    throw_error(ErrorCode::invalid_argument, "moe_route: {} experts (at most {})", a.E, kMoeMaxExperts);
  moe_route_kernel<<<cuda::grid_blocks(a.T, kRouteWarps), 32 * kRouteWarps, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "moe_route launch");
}

void CudaBackend::moe_group(const MoeGroupArgs& a) {
  enter();
  if (a.E <= 0 || a.E > kMoeMaxExperts)
    throw_error(ErrorCode::invalid_argument, "moe_group: {} experts (1 to {})", a.E, kMoeMaxExperts);
  moe_group_kernel<<<1, kGroupThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "moe_group launch");
}

void CudaBackend::moe_combine(const MoeCombineArgs& a) {
  enter();
  if (a.T == 0 || a.H == 0) return;
  const dim3 grid(cuda::grid_blocks(a.H, cuda::kThreads), cuda::grid_blocks(a.T));
  moe_combine_kernel<<<grid, cuda::kThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "moe_combine launch");
}

void CudaBackend::scale_rows(const ScaleRowsArgs& a) {
  enter();
  if (a.n == 0 || a.width == 0) return;
  const dim3 grid(cuda::grid_blocks(a.width, cuda::kThreads), cuda::grid_blocks(a.n));
  scale_rows_kernel<<<grid, cuda::kThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "scale_rows launch");
}

}  // namespace keel
