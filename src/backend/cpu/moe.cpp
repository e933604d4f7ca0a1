#include "backend/cpu/moe.h"

#include <cmath>
#include <cstring>

#include "backend/moe_host.h"
#include "backend/topk.h"
#include "core/tensor.h"

namespace keel::cpu {

namespace {

using topk::offer;
using topk::Pick;

inline float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

void route_softmax(const MoeRouteArgs& a, const float* l, int32_t* idx, float* w) {
  Pick top[kMoeMaxTopK];
  int64_t n = 0;
  float lmax = l[0];
  for (int64_t e = 0; e < a.E; ++e) {
    lmax = l[e] > lmax ? l[e] : lmax;
    offer(top, n, a.top_k, l[e], static_cast<int32_t>(e));  // softmax is monotonic: rank by logit
  }
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (w[j] = std::exp(top[j].score - lmax));
  for (int64_t j = 0; j < n; ++j) w[j] /= sum, idx[j] = top[j].index;
}

// bias: [E] f32 (MoeRouteArgs::bias widened) or null.
void route_sigmoid_grouped(const MoeRouteArgs& a, const float* bias, const float* l, int32_t* idx, float* w) {
  auto choice = [&](int64_t e) { return sigmoid(l[e]) + (bias ? bias[e] : 0.0f); };
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
  for (int64_t j = 0; j < n; ++j) sum += (w[j] = sigmoid(l[top[j].index]));  // unbiased scores
  const float norm = a.norm_topk_prob ? 1.0f / (sum + 1e-20f) : 1.0f;
  for (int64_t j = 0; j < n; ++j) w[j] = w[j] * norm * a.scaling, idx[j] = top[j].index;
}

}  // namespace

void moe_route(CpuBackend& be, const MoeRouteArgs& a) {
  Tensor bias_f32;  // router bias widened to f32, when given
  if (a.bias.data) {
    bias_f32 = Tensor::empty(be.pool(), DType::f32, {a.E}, "moe router bias");
    for (int64_t e = 0; e < a.E; ++e) bias_f32.ptr<float>()[e] = a.bias.at(e);
  }
  const float* bias = bias_f32.defined() && a.E > 0 ? bias_f32.ptr<float>() : nullptr;
  be.threads()->parallel_for(a.T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      const float* l = a.logits + t * a.logits_st;
      int32_t* idx = a.indices + t * a.top_k;
      float* w = a.weights + t * a.top_k;
      if (a.sigmoid_grouped)
        route_sigmoid_grouped(a, bias, l, idx, w);
      else
        route_softmax(a, l, idx, w);
    }
  });
}

// out[t] += weights[t, j] · y[position[t, j]] over t's slots in ascending position, each term rounded before
// the add (kernel_args.h MoeCombineArgs): the same arithmetic, per row, as adding expert by expert.
void moe_combine(CpuBackend& be, const MoeCombineArgs& a) {
  be.threads()->parallel_for(a.T, [&](int64_t begin, int64_t end, int) {
    int32_t pos[kMoeMaxTopK];
    float wt[kMoeMaxTopK];
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = 0;
      for (int64_t j = 0; j < a.k; ++j) {  // insertion by position
        const int32_t p = a.position[t * a.k + j];
        if (p < 0) continue;
        int64_t at = n++;
        for (; at > 0 && pos[at - 1] > p; --at) pos[at] = pos[at - 1], wt[at] = wt[at - 1];
        pos[at] = p, wt[at] = a.weights[t * a.k + j];
      }
      float* d = a.out + t * a.out_st;
      for (int64_t j = 0; j < n; ++j) {
        const float* s = a.y + pos[j] * a.y_st;
        const float c = wt[j];
        for (int64_t i = 0; i < a.H; ++i) d[i] += c * s[i];
      }
    }
  });
}

void moe_scale_rows(CpuBackend& be, const ScaleRowsArgs& a) {
  be.threads()->parallel_for(a.n, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = 0; i < a.width; ++i) a.dst[r * a.dst_st + i] *= a.scale[r];
  });
}

}  // namespace keel::cpu

namespace keel {

int64_t CpuBackend::moe_route_workspace(const MoeRouteArgs& a) const {
  return a.bias.data ? 4 * a.E : 0;  // the bias widened to f32
}

void CpuBackend::moe_route(const MoeRouteArgs& a) {
  cpu::moe_route(*this, a);
}

void CpuBackend::moe_group(const MoeGroupArgs& a) {
  host_moe::group(a);
}

void CpuBackend::grouped_matmul(const GroupedMatmulArgs& a) {
  Tensor gather;  // one expert's gathered rows at a time
  if (a.x_rows && a.m.T > 0)
    gather = Tensor::empty(pool(), DType::f32, {a.tokens, a.m.in}, "moe expert inputs");
  host_moe::grouped_matmul(*this, a, gather.defined() ? gather.ptr<float>() : nullptr);
}

int64_t CpuBackend::grouped_matmul_workspace(const GroupedMatmulArgs& a) const {
  return a.m.T > 0 ? host_moe::gather_bytes(a) + host_moe::expert_matmul_workspace(*this, a) : 0;
}

void CpuBackend::moe_combine(const MoeCombineArgs& a) {
  cpu::moe_combine(*this, a);
}

void CpuBackend::scale_rows(const ScaleRowsArgs& a) {
  cpu::moe_scale_rows(*this, a);
}

}  // namespace keel
