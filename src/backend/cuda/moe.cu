// CUDA MoE routing and row moves (ops/moe.h states the routing math). Routing is one thread per token running
// the CPU's algorithm (backend/cpu/moe.cpp) step for step: the same insertion top-k (descending score, the
// lower index first on equal scores, NaN never ranked above anything), the same f32 sums in the same order.
// The router bias is read in its stored dtype, so routing takes no workspace.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "backend/topk.h"

namespace keel {

namespace {

using topk::offer;
using topk::Pick;

// softmax_topk: rank by logit (softmax is monotonic), weights exp(l − max) / Σ over the picks.
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
// ·scaling.
__device__ void route_sigmoid_grouped(const MoeRouteArgs& a, const float* l, int32_t* idx, float* w) {
  const bool has_bias = a.bias.data != nullptr;
  auto choice = [&](int64_t e) {
    return cuda::sigmoid(l[e]) + (has_bias ? cuda::param_at(a.bias, e) : 0.0f);
  };
  bool allowed[kMoeMaxGroups];
  const int64_t per_group = a.E / a.n_group;
  if (a.n_group > 1) {
    Pick groups[kMoeMaxGroups];
    int64_t n_groups = 0;
    for (int64_t g = 0; g < a.n_group; ++g) {
      Pick best2[2];
      int64_t n2 = 0;
      for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e)
        offer(best2, n2, 2, choice(e), static_cast<int32_t>(e));
      offer(groups, n_groups, a.topk_group, best2[0].score + best2[1].score, static_cast<int32_t>(g));
      allowed[g] = false;
    }
    for (int64_t j = 0; j < n_groups; ++j) allowed[groups[j].index] = true;
  }
  Pick top[kMoeMaxTopK];
  int64_t n = 0;
  for (int64_t e = 0; e < a.E; ++e)
    if (a.n_group <= 1 || allowed[e / per_group]) offer(top, n, a.top_k, choice(e), static_cast<int32_t>(e));
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (w[j] = cuda::sigmoid(l[top[j].index]));  // unbiased scores
  const float norm = a.norm_topk_prob ? 1.0f / (sum + 1e-20f) : 1.0f;
  for (int64_t j = 0; j < n; ++j) w[j] = w[j] * norm * a.scaling, idx[j] = top[j].index;
}

// One thread per token t: logits row t at logits + t·logits_st floats; indices/weights rows [top_k].
__global__ void moe_route_kernel(MoeRouteArgs a) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < a.T;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* l = a.logits + t * a.logits_st;
    int32_t* idx = a.indices + t * a.top_k;
    float* w = a.weights + t * a.top_k;
    if (a.sigmoid_grouped)
      route_sigmoid_grouped(a, l, idx, w);
    else
      route_softmax(a, l, idx, w);
  }
}

constexpr int kRouteThreads = 64;  // per-thread top-k lists live in local memory

// Rows of `width` floats (strides in floats); blocks stride over rows (y) and a row's elements (x). rows and
// scale are device arrays of n.
__global__ void move_rows_kernel(MoveRowsArgs a) {
  for (int64_t r = blockIdx.y; r < a.n; r += gridDim.y) {
    const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    switch (a.op) {
      case RowsOp::gather: {
        const float* s = a.src + a.rows[r] * a.src_st;
        float* d = a.dst + r * a.dst_st;
        for (int64_t i = first; i < a.width; i += step) d[i] = s[i];
        break;
      }
      case RowsOp::scatter_add: {  // rows[] distinct: no two rows write one destination
        const float* s = a.src + r * a.src_st;
        float* d = a.dst + a.rows[r] * a.dst_st;
        const float c = a.scale[r];
        for (int64_t i = first; i < a.width; i += step) d[i] = __fadd_rn(d[i], __fmul_rn(c, s[i]));
        break;
      }
      case RowsOp::scale: {
        float* d = a.dst + r * a.dst_st;
        const float c = a.scale[r];
        for (int64_t i = first; i < a.width; i += step) d[i] *= c;
        break;
      }
    }
  }
}

}  // namespace

int64_t CudaBackend::moe_route_workspace(const MoeRouteArgs&) const {
  return 0;  // the bias is read as stored
}

void CudaBackend::moe_route(const MoeRouteArgs& a) {
  enter();
  if (a.T == 0 || a.E == 0) return;
  moe_route_kernel<<<cuda::grid_blocks(a.T, kRouteThreads), kRouteThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "moe_route launch");
}

void CudaBackend::move_rows(const MoveRowsArgs& a) {
  enter();
  if (a.n == 0 || a.width == 0) return;
  const dim3 grid(cuda::grid_blocks(a.width, cuda::kThreads), cuda::grid_blocks(a.n));
  move_rows_kernel<<<grid, cuda::kThreads, 0, stream()>>>(a);
  cuda::check(cudaGetLastError(), "move_rows launch");
}

}  // namespace keel
