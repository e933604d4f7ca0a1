#include "ops/moe.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/matmul.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {
constexpr const char* kOp = "moe";
constexpr auto kWeightDtypes = {DType::f32, DType::bf16, DType::f16};

int64_t mm(const Backend& be, int64_t T, int64_t in, int64_t out, const WeightFormat& d) {
  return matmul_workspace_bytes(be, T, in, out, d);
}

// The bytes of the (token, weight) pairs grouped by expert (on the device), and of the routing result.
int64_t grouping_bytes(const MoeShape& s) {
  return 8 * s.T * s.top_k;
}
int64_t routing_bytes(const MoeShape& s) {
  return 8 * s.T * s.top_k;
}
int64_t router_bias_bytes(const Backend& be, const MoeShape& s) {
  return moe_route_workspace_bytes(be, s.T, s.E, s.router_bias);
}

// An expert MLP's weights: shapes [I, H] (up, gate) and [H, I] (down), one format for all experts.
bool same_format(const Weight& a, const Weight& b) {
  return a.dtype() == b.dtype() && a.bits == b.bits && a.group_size == b.group_size &&
         (!a.is_packed() || a.scales.dtype() == b.scales.dtype());
}

void check_expert_weights(const MoeWeights& w, int64_t H, bool swiglu, int64_t& E, int64_t& I) {
  E = static_cast<int64_t>(w.up.size());
  if (E == 0) throw_error(ErrorCode::invalid_argument, "{}: no expert weights", kOp);
  if (static_cast<int64_t>(w.down.size()) != E || static_cast<int64_t>(w.gate.size()) != (swiglu ? E : 0))
    throw_error(ErrorCode::invalid_argument, "{}: {} up, {} gate, {} down expert weights (want {} each{})",
                kOp, w.up.size(), w.gate.size(), w.down.size(), E, swiglu ? "" : ", no gate for relu2");
  I = w.up[0].ndim() == 2 ? w.up[0].rows() : 0;
  check_weight(kOp, "experts.0.up_proj", w.up[0], kWeightDtypes, I, H);
  check_weight(kOp, "experts.0.down_proj", w.down[0], kWeightDtypes, H, I);
  // up and gate share experts.0.up_proj's format, down experts.0.down_proj's (an MLX folder may leave
  // down_proj in float where its input is not a multiple of the group size).
  auto ok = [&](const Weight& t, const Weight& first, int64_t rows, int64_t cols) {
    return same_format(t, first) && t.ndim() == 2 && t.rows() == rows && t.cols() == cols &&
           (t.data.dim(1) <= 1 || t.data.stride_bytes(1) == dtype_info(first.dtype()).block_bytes);
  };
  auto check = [&](const Weight& t, const Weight& first, const char* first_name, const char* what, int64_t e,
                   int64_t rows, int64_t cols) {
    if (ok(t, first, rows, cols)) return;  // names are formatted only for the error
    const std::string name = fmt::format("experts.{}.{}", e, what);
    if (!same_format(t, first))
      throw_error(ErrorCode::invalid_argument, "{}: {} is {}, {} {}", kOp, name, t.describe(), first_name,
                  first.describe());
    check_weight(kOp, name, t, {first.dtype()}, rows, cols);
  };
  for (int64_t e = 0; e < E; ++e) {
    check(w.up[e], w.up[0], "experts.0.up_proj", "up_proj", e, I, H);
    check(w.down[e], w.down[0], "experts.0.down_proj", "down_proj", e, H, I);
    if (swiglu) check(w.gate[e], w.up[0], "experts.0.up_proj", "gate_proj", e, I, H);
  }
}

// One MLP over the rows of xin: hidden = act(up(x)) or silu(gate(x)) ⊙ up(x) in `hidden` ([n, I] or [n, 2I]),
// then y = down(hidden).
void run_mlp(Backend& be, const Tensor& xin, const Weight& up, const Weight* gate, const Weight& down,
             Tensor& hidden, Tensor& y) {
  const int64_t I = up.rows();
  if (gate) {
    Tensor g = hidden.slice(1, 0, I), u = hidden.slice(1, I, I);
    matmul(be, xin, *gate, g);
    matmul(be, xin, up, u);
    activation_mul(be, g, u, g, Activation::silu);
    matmul(be, g, down, y);
  } else {
    matmul(be, xin, up, hidden);
    activation(be, hidden, hidden, Activation::relu2);
    matmul(be, hidden, down, y);
  }
}

}  // namespace

int64_t moe_route_workspace_bytes(const Backend& be, int64_t T, int64_t E, bool router_bias) {
  MoeRouteArgs a;
  a.T = T, a.E = E;
  if (router_bias) a.bias.data = &a;  // only "a bias is given" matters for the size
  return be.moe_route_workspace(a);
}

int64_t moe_experts_workspace_bytes(const Backend& be, const MoeShape& s) {
  if (s.T == 0) return 0;
  const int64_t f = s.swiglu ? 2 : 1;
  return grouping_bytes(s) + 4 * s.T * (2 * s.H + f * s.I) +
         std::max(mm(be, s.T, s.H, s.I, s.weight_dtype),
                  mm(be, s.T, s.I, s.H, s.down_dtype.value_or(s.weight_dtype)));
}

int64_t moe_workspace_bytes(const Backend& be, const MoeShape& s) {
  if (s.T == 0) return 0;
  const int64_t f = s.swiglu ? 2 : 1;
  int64_t peak = 0;
  if (s.Is > 0)
    peak =
        4 * s.T * f * s.Is + std::max(mm(be, s.T, s.H, s.Is, s.shared_dtype),
                                      mm(be, s.T, s.Is, s.H, s.shared_down_dtype.value_or(s.shared_dtype)));
  if (s.Is > 0 && s.shared_gate)
    peak = std::max(peak, 4 * s.T + mm(be, s.T, s.H, 1, s.shared_expert_gate_dtype.value_or(s.shared_dtype)));
  peak = std::max(peak, 4 * s.T * s.E + std::max(mm(be, s.T, s.H, s.E, s.router_dtype),
                                                 routing_bytes(s) + router_bias_bytes(be, s)));
  return std::max(peak, routing_bytes(s) + moe_experts_workspace_bytes(be, s));
}

void moe_route(Backend& be, const Tensor& logits, const Tensor& router_bias, const MoeParams& p,
               Tensor& indices, Tensor& weights) {
  check_tensor(kOp, "router logits", logits, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t T = logits.dim(0), E = logits.dim(1), k = p.top_k;
  check_contiguous(kOp, "indices", indices, {DType::i32}, {T, k});
  check_contiguous(kOp, "weights", weights, {DType::f32}, {T, k});
  if (k < 1 || k > E || k > kMoeMaxTopK)
    throw_error(ErrorCode::invalid_argument, "{}: top_k {} with {} experts (1 ≤ top_k ≤ min(E, {}))", kOp, k,
                E, kMoeMaxTopK);
  const bool grouped = p.router == MoeRouter::sigmoid_grouped;
  if (grouped) {
    const int64_t G = p.n_group;
    if (G < 1 || G > kMoeMaxGroups || E % G != 0 || p.topk_group < 1 || p.topk_group > G ||
        (G > 1 && E / G < 2) || k > p.topk_group * (E / G))
      throw_error(ErrorCode::invalid_argument,
                  "{}: {} experts in n_group {} keeping topk_group {} cannot yield top_k {} (groups need ≥ 2 "
                  "experts, n_group ≤ {})",
                  kOp, E, G, p.topk_group, k, kMoeMaxGroups);
  }
  if (grouped && router_bias.defined())
    check_contiguous(kOp, "e_score_correction_bias", router_bias, kWeightDtypes, {E});
  require_support(be, Op::moe, DType::f32, "moe_route");
  MoeRouteArgs a;
  a.T = T, a.E = E, a.top_k = k, a.sigmoid_grouped = grouped;
  a.n_group = p.n_group, a.topk_group = p.topk_group, a.norm_topk_prob = p.norm_topk_prob;
  a.scaling = p.routed_scaling_factor;
  a.logits = logits.ptr<float>(), a.logits_st = stride_floats(kOp, "router logits", logits, 0);
  if (grouped && router_bias.defined()) a.bias = ParamVec{router_bias.data(), router_bias.dtype()};
  a.indices = indices.ptr<int32_t>(), a.weights = weights.ptr<float>();
  be.moe_route(a);
}

void moe_experts(Backend& be, const Tensor& x, const Tensor& indices, const Tensor& weights,
                 const MoeWeights& w, MoeActivation activation, Tensor& out) {
  check_tensor(kOp, "x", x, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), H = x.dim(1);
  const bool swiglu = activation == MoeActivation::swiglu;
  int64_t E = 0, I = 0;
  check_expert_weights(w, H, swiglu, E, I);
  check_contiguous(kOp, "indices", indices, {DType::i32}, {T, kAnyDim});
  const int64_t k = indices.dim(1);
  check_contiguous(kOp, "weights", weights, {DType::f32}, {T, k});
  check_tensor(kOp, "out", out, {DType::f32}, {T, H});
  require_support(be, Op::moe, w.up[0], kOp);
  if (T == 0) return;

  // Group the (token, slot) pairs by expert on the host (the routing result is T·k ids and weights): a
  // counting sort, tokens ascending within an expert; the grouped rows and weights go back to the device.
  std::vector<int32_t> idx(static_cast<size_t>(T * k));
  std::vector<float> wts(static_cast<size_t>(T * k));
  be.download(indices, idx.data(), 4 * T * k);
  be.download(weights, wts.data(), 4 * T * k);
  for (int64_t i = 0; i < T * k; ++i)
    if (idx[i] < 0 || idx[i] >= E)
      throw_error(ErrorCode::invalid_argument, "{}: token {} slot {} routes to expert {}, outside [0, {})",
                  kOp, i / k, i % k, idx[i], E);
  std::vector<int64_t> off(static_cast<size_t>(E + 1), 0);  // off[e] = first pair of expert e
  std::vector<int32_t> grouped_tokens(static_cast<size_t>(T * k));
  std::vector<float> grouped_scales(static_cast<size_t>(T * k));
  for (int64_t i = 0; i < T * k; ++i) ++off[idx[i] + 1];
  for (int64_t e = 0; e < E; ++e) off[e + 1] += off[e];
  for (int64_t i = 0; i < T * k;
       ++i) {  // off[e] runs as expert e's cursor, ending at the next expert's start
    const int64_t pos = off[idx[i]]++;
    grouped_tokens[pos] = static_cast<int32_t>(i / k);
    grouped_scales[pos] = wts[i];
  }
  for (int64_t e = E; e > 0; --e) off[e] = off[e - 1];
  off[0] = 0;
  Tensor tokens = Tensor::empty(be.pool(), DType::i32, {T * k}, "moe grouped tokens");
  Tensor scales = Tensor::empty(be.pool(), DType::f32, {T * k}, "moe grouped weights");
  be.upload(grouped_tokens.data(), 4 * T * k, tokens);
  be.upload(grouped_scales.data(), 4 * T * k, scales);

  // One expert at a time over its rows: gather, MLP, scatter-add with the routing weights.
  Tensor xe = Tensor::empty(be.pool(), DType::f32, {T, H}, "moe expert inputs");
  Tensor hidden = Tensor::empty(be.pool(), DType::f32, {T, (swiglu ? 2 : 1) * I}, "moe expert hidden");
  Tensor ye = Tensor::empty(be.pool(), DType::f32, {T, H}, "moe expert outputs");
  const int64_t x_st = stride_floats(kOp, "x", x, 0), out_st = stride_floats(kOp, "out", out, 0);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = off[e + 1] - off[e];
    if (n == 0) continue;
    const int32_t* rows = tokens.ptr<int32_t>() + off[e];  // device memory of `be`
    be.move_rows(MoveRowsArgs{RowsOp::gather, x.ptr<float>(), x_st, rows, nullptr, n, H, xe.ptr<float>(), H});
    Tensor xn = xe.slice(0, 0, n), hn = hidden.slice(0, 0, n), yn = ye.slice(0, 0, n);
    run_mlp(be, xn, w.up[e], swiglu ? &w.gate[e] : nullptr, w.down[e], hn, yn);
    be.move_rows(MoveRowsArgs{RowsOp::scatter_add, ye.ptr<float>(), H, rows, scales.ptr<float>() + off[e], n,
                              H, out.ptr<float>(), out_st});
  }
}

void moe(Backend& be, const Tensor& x, const MoeWeights& w, const MoeParams& p, Tensor& out) {
  check_tensor(kOp, "x", x, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), H = x.dim(1);
  check_weight(kOp, "gate.weight (router)", w.router, kWeightDtypes, kAnyDim, H);
  const int64_t E = w.router.rows(), k = p.top_k;
  check_tensor(kOp, "out", out, {DType::f32}, {T, H});
  if (static_cast<int64_t>(w.up.size()) != E)
    throw_error(ErrorCode::invalid_argument, "{}: router has {} experts, {} expert weights given", kOp, E,
                w.up.size());
  const bool swiglu = p.activation == MoeActivation::swiglu;
  require_support(be, Op::moe, w.router, kOp);
  if (T == 0) return;

  // Shared expert first, written straight into out (scaled by its sigmoid gate when there is one).
  if (w.shared_up.defined()) {
    check_weight(kOp, "shared_expert.up_proj", w.shared_up, kWeightDtypes, kAnyDim, H);
    const int64_t Is = w.shared_up.rows();
    check_weight(kOp, "shared_expert.down_proj", w.shared_down, kWeightDtypes, H, Is);
    if (swiglu) check_weight(kOp, "shared_expert.gate_proj", w.shared_gate, kWeightDtypes, Is, H);
    {
      Tensor hidden = Tensor::empty(be.pool(), DType::f32, {T, (swiglu ? 2 : 1) * Is}, "moe shared hidden");
      run_mlp(be, x, w.shared_up, swiglu ? &w.shared_gate : nullptr, w.shared_down, hidden, out);
    }
    if (w.shared_expert_gate.defined()) {
      check_weight(kOp, "shared_expert_gate", w.shared_expert_gate, kWeightDtypes, 1, H);
      Tensor g = Tensor::empty(be.pool(), DType::f32, {T, 1}, "moe shared gate");
      matmul(be, x, w.shared_expert_gate, g);
      activation(be, g, g, Activation::sigmoid);
      be.move_rows(MoveRowsArgs{RowsOp::scale, nullptr, 0, nullptr, g.ptr<float>(), T, H, out.ptr<float>(),
                                stride_floats(kOp, "out", out, 0)});
    }
  } else if (out.is_contiguous()) {
    be.fill_zero(out);
  } else {
    for (int64_t t = 0; t < T; ++t) {
      Tensor row = out.slice(0, t, 1);
      be.fill_zero(row);
    }
  }

  Tensor indices, weights;
  {
    Tensor logits = Tensor::empty(be.pool(), DType::f32, {T, E}, "moe router logits");
    matmul(be, x, w.router, logits);
    indices = Tensor::empty(be.pool(), DType::i32, {T, k}, "moe expert indices");
    weights = Tensor::empty(be.pool(), DType::f32, {T, k}, "moe expert weights");
    moe_route(be, logits, w.router_bias, p, indices, weights);
  }
  moe_experts(be, x, indices, weights, w, p.activation, out);
}

}  // namespace keel::ops
