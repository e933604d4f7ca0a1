// CUDA MoE routing, grouping, combine and the shared expert's gate (ops/moe.h states the math; the grouped
// expert matmul is matmul.cu's). Routing is a warp per token and gives the CPU's picks (backend/cpu/moe.cpp:
// the insertion top-k of backend/topk.h, descending score, the lower index first on equal scores, NaN never
// ranked above anything), the same f32 sums in the same order. The router bias is read in its stored dtype,
// so routing takes no workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/topk.h"
#include "core/error.h"

namespace keel {

namespace {

using topk::offer;
using topk::Pick;

// The routers' picks, best first, into top[0, n) (n returned), by the CPU's insertion top-k over ascending
// experts; lane 0 of the warp runs them. score: the token's ranking scores [E] in shared memory (logits for
// softmax_topk, choices for sigmoid_grouped).
__device__ int64_t sequential_picks(const MoeRouteArgs& a, const float* score, Pick* top) {
  int64_t n = 0;
  if (!a.sigmoid_grouped || a.n_group <= 1) {
    for (int64_t e = 0; e < a.E; ++e) offer(top, n, a.top_k, score[e], static_cast<int32_t>(e));
    return n;
  }
  // sigmoid_grouped over groups: groups scored by their two best choices, the topk_group best kept.
  bool allowed[kMoeMaxGroups];
  const int64_t per_group = a.E / a.n_group;
  Pick groups[kMoeMaxGroups];
  int64_t n_groups = 0;
  for (int64_t g = 0; g < a.n_group; ++g) {
    Pick best2[2];
    int64_t n2 = 0;
    for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e)
      offer(best2, n2, 2, score[e], static_cast<int32_t>(e));
    offer(groups, n_groups, a.topk_group, best2[0].score + best2[1].score, static_cast<int32_t>(g));
    allowed[g] = false;
  }
  for (int64_t j = 0; j < n_groups; ++j) allowed[groups[j].index] = true;
  for (int64_t e = 0; e < a.E; ++e)
    if (allowed[e / per_group]) offer(top, n, a.top_k, score[e], static_cast<int32_t>(e));
  return n;
}

// The warp's best pick of its lanes' (index < 0: none) by ranks_above; every lane gets it.
__device__ Pick warp_best(Pick p) {
  for (int o = 16; o > 0; o >>= 1) {
    const Pick q{__shfl_xor_sync(0xffffffffu, p.score, o), __shfl_xor_sync(0xffffffffu, p.index, o)};
    if (q.index >= 0 && (p.index < 0 || topk::ranks_above(q.score, q.index, p))) p = q;
  }
  return p;
}

// The same picks as sequential_picks over all E experts when no score is NaN: ranking by (score
// descending, index ascending) is then a strict order, and the insertion top-k keeps its k best in that
// order, which is what k warp rounds find, each the best ranked below the previous pick (lane l looks at
// experts l, l + 32, …). Every lane calls and gets n and top.
__device__ int64_t warp_picks(const MoeRouteArgs& a, const float* score, int lane, Pick* top) {
  Pick prev{0.0f, -1};
  int64_t n = 0;
  for (; n < a.top_k; ++n) {
    Pick b{0.0f, -1};
    for (int64_t e = lane; e < a.E; e += 32) {
      const Pick c{score[e], static_cast<int32_t>(e)};
      if (prev.index >= 0 && !topk::ranks_above(prev.score, prev.index, c)) continue;
      if (b.index < 0 || topk::ranks_above(c.score, c.index, b)) b = c;
    }
    b = warp_best(b);
    if (b.index < 0) break;
    top[n] = prev = b;
  }
  return n;
}

// The weights of the picks top[0, n) and their indices, lane 0.
// softmax_topk: exp(l − lmax) / Σ over the picks (lmax the row's largest logit). sigmoid_grouped: the
// unbiased sigmoids of the picks, / (Σ + 1e-20) when norm_topk_prob, ·scaling. The weights are summed in
// the thread's own array and stored once (summing in w itself read each store back from global memory).
__device__ void write_route(const MoeRouteArgs& a, const Pick* top, int64_t n, float lmax, const float* sig,
                            int32_t* idx, float* w) {
  float v[kMoeMaxTopK];
  float sum = 0;
  if (!a.sigmoid_grouped) {
    for (int64_t j = 0; j < n; ++j) sum += (v[j] = expf(top[j].score - lmax));
    for (int64_t j = 0; j < n; ++j) w[j] = v[j] / sum, idx[j] = top[j].index;
    return;
  }
  for (int64_t j = 0; j < n; ++j) sum += (v[j] = sig[top[j].index]);  // unbiased scores
  const float norm = a.norm_topk_prob ? 1.0f / (sum + 1e-20f) : 1.0f;
  for (int64_t j = 0; j < n; ++j) w[j] = v[j] * norm * a.scaling, idx[j] = top[j].index;
}

// A warp per token t (logits row t at logits + t·logits_st floats; indices/weights rows [top_k]): the lanes
// bring the row into shared memory (sigmoid_grouped: its sigmoids and choices, each element's f32 formula,
// the same bits whichever thread computes it) and, unless a score is NaN or the router ranks groups first,
// find the picks together (warp_picks); else lane 0 runs the CPU's algorithm on the row
// (sequential_picks). Lane 0 writes the weights. One thread per token reading the row from global memory
// spent 45 µs per decode step's routing (ncu, H200, 128 experts); lane 0's insertion over the row in
// shared memory 26 µs.
constexpr int kRouteWarps = 4;
__global__ void __launch_bounds__(32 * kRouteWarps) moe_route_kernel(MoeRouteArgs a) {
  cuda::pdl_begin();
  __shared__ float row[kRouteWarps][kMoeMaxExperts], sig[kRouteWarps][kMoeMaxExperts];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool has_bias = a.bias.data != nullptr;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kRouteWarps + warp; t < a.T;
       t += static_cast<int64_t>(gridDim.x) * kRouteWarps) {
    const float* l = a.logits + t * a.logits_st;
    bool nan = false;
    float lmax = -INFINITY;  // softmax: the row's largest logit (with no NaN, any order's max)
    for (int64_t e = lane; e < a.E; e += 32) {
      if (a.sigmoid_grouped) {
        sig[warp][e] = cuda::sigmoid(l[e]);
        row[warp][e] = sig[warp][e] + (has_bias ? cuda::param_at(a.bias, e) : 0.0f);  // the choice
      } else {
        row[warp][e] = l[e];
        lmax = l[e] > lmax ? l[e] : lmax;
      }
      nan |= row[warp][e] != row[warp][e];
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float u = __shfl_xor_sync(0xffffffffu, lmax, o);
      lmax = u > lmax ? u : lmax;
    }
    __syncwarp();
    Pick top[kMoeMaxTopK];
    int64_t n = 0;
    const bool together = !__any_sync(0xffffffffu, nan) && (!a.sigmoid_grouped || a.n_group <= 1);
    if (together) n = warp_picks(a, row[warp], lane, top);
    if (lane == 0) {
      if (!together) {
        n = sequential_picks(a, row[warp], top);
        lmax = row[warp][0];  // the CPU's scan: l[0], then each larger one (a NaN is never taken)
        for (int64_t e = 0; e < a.E; ++e) lmax = row[warp][e] > lmax ? row[warp][e] : lmax;
      }
      write_route(a, top, n, lmax, sig[warp], a.indices + t * a.top_k, a.weights + t * a.top_k);
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
  cuda::pdl_begin();
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
  cuda::pdl_begin();
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
  cuda::pdl_begin();
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
  cuda::launch(moe_route_kernel, cuda::grid_blocks(a.T, kRouteWarps), 32 * kRouteWarps, 0, stream(), a);
  cuda::check(cudaGetLastError(), "moe_route launch");
}

void CudaBackend::moe_group(const MoeGroupArgs& a) {
  enter();
  if (a.E <= 0 || a.E > kMoeMaxExperts)
    throw_error(ErrorCode::invalid_argument, "moe_group: {} experts (1 to {})", a.E, kMoeMaxExperts);
  cuda::launch(moe_group_kernel, 1, kGroupThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "moe_group launch");
}

void CudaBackend::moe_combine(const MoeCombineArgs& a) {
  enter();
  if (a.T == 0 || a.H == 0) return;
  const dim3 grid(cuda::grid_blocks(a.H, cuda::kThreads), cuda::grid_blocks(a.T));
  cuda::launch(moe_combine_kernel, grid, cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "moe_combine launch");
}

void CudaBackend::scale_rows(const ScaleRowsArgs& a) {
  enter();
  if (a.n == 0 || a.width == 0) return;
  const dim3 grid(cuda::grid_blocks(a.width, cuda::kThreads), cuda::grid_blocks(a.n));
  cuda::launch(scale_rows_kernel, grid, cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "scale_rows launch");
}

}  // namespace keel
