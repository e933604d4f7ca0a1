#include "ops/reference/moe_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace keel::ref {

namespace {

// Indices of v sorted by value descending, ties to the lower index.
std::vector<int64_t> ranking(const std::vector<double>& v) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  return order;
}

// Gap between the n-th best and the (n+1)-th best of v (infinite when nothing is dropped).
double gap(const std::vector<double>& v, const std::vector<int64_t>& order, size_t n) {
  return n < order.size() ? v[order[n - 1]] - v[order[n]] : INFINITY;
}

std::vector<double> linear(const std::vector<double>& w, int64_t out, int64_t in, const double* x) {
  std::vector<double> y(out, 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) y[o] += w[o * in + i] * x[i];
  return y;
}

std::vector<double> mlp(bool swiglu, const std::vector<double>& up, const std::vector<double>& gate,
                        const std::vector<double>& down, int64_t I, int64_t H, const double* x) {
  std::vector<double> h = linear(up, I, H, x);
  if (swiglu) {
    std::vector<double> g = linear(gate, I, H, x);
    for (int64_t i = 0; i < I; ++i) h[i] *= g[i] / (1 + std::exp(-g[i]));
  } else {
    for (double& v : h) v = v > 0 ? v * v : 0;
  }
  return linear(down, H, I, h.data());
}

}  // namespace

MoeRouting moe_route(const MoeConfig& c, int64_t T, int64_t E, const std::vector<double>& logits,
                     const std::vector<double>& bias) {
  MoeRouting r;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> l(logits.begin() + t * E, logits.begin() + (t + 1) * E), score(E), choice(E);
    double margin = INFINITY;
    if (c.sigmoid_grouped) {
      for (int64_t e = 0; e < E; ++e) {
        score[e] = 1 / (1 + std::exp(-l[e]));
        choice[e] = score[e] + (bias.empty() ? 0.0 : bias[e]);
      }
      const int64_t per = E / c.n_group;
      if (c.n_group > 1) {  // a group scores the sum of its two best choices; the topk_group best groups stay
        std::vector<double> group_score(c.n_group);
        for (int64_t g = 0; g < c.n_group; ++g) {
          std::vector<double> members(choice.begin() + g * per, choice.begin() + (g + 1) * per);
          std::vector<int64_t> o = ranking(members);
          group_score[g] = members[o[0]] + members[o[1]];
        }
        std::vector<int64_t> go = ranking(group_score);
        margin = std::min(margin, gap(group_score, go, c.topk_group));
        for (size_t j = c.topk_group; j < go.size(); ++j)
          for (int64_t e = go[j] * per; e < (go[j] + 1) * per; ++e) choice[e] = -INFINITY;
      }
    } else {
      const double mx = *std::max_element(l.begin(), l.end());
      double z = 0;
      for (int64_t e = 0; e < E; ++e) z += (score[e] = std::exp(l[e] - mx));
      for (double& p : score) p /= z;
      choice = score;
    }
    std::vector<int64_t> o = ranking(choice);
    margin = std::min(margin, gap(choice, o, c.top_k));
    double sum = 0;
    for (int64_t j = 0; j < c.top_k; ++j) sum += score[o[j]];
    for (int64_t j = 0; j < c.top_k; ++j) {
      double w = score[o[j]];
      if (!c.sigmoid_grouped)
        w /= sum;
      else
        w = (c.norm_topk_prob ? w / (sum + 1e-20) : w) * c.scaling;
      r.indices.push_back(o[j]);
      r.weights.push_back(w);
    }
    r.margin.push_back(margin);
  }
  return r;
}

std::vector<double> moe(const MoeConfig& c, int64_t T, int64_t H, const MoeWeightsRef& w,
                        const std::vector<double>& x, MoeRouting* routing) {
  std::vector<double> logits;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> l = linear(w.router, w.E, H, &x[t * H]);
    logits.insert(logits.end(), l.begin(), l.end());
  }
  MoeRouting r = moe_route(c, T, w.E, logits, w.bias);
  std::vector<double> out(static_cast<size_t>(T * H), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double* xt = &x[t * H];
    for (int64_t j = 0; j < c.top_k; ++j) {
      const int64_t e = r.indices[t * c.top_k + j];
      std::vector<double> y = mlp(c.swiglu, w.up[e], c.swiglu ? w.gate[e] : w.up[e], w.down[e], w.I, H, xt);
      for (int64_t i = 0; i < H; ++i) out[t * H + i] += r.weights[t * c.top_k + j] * y[i];
    }
    if (w.Is > 0) {
      std::vector<double> y = mlp(c.swiglu, w.shared_up, w.shared_gate, w.shared_down, w.Is, H, xt);
      double g = 1;
      if (!w.shared_expert_gate.empty()) g = 1 / (1 + std::exp(-linear(w.shared_expert_gate, 1, H, xt)[0]));
      for (int64_t i = 0; i < H; ++i) out[t * H + i] += g * y[i];
    }
  }
  if (routing) *routing = r;
  return out;
}

}  // namespace keel::ref
