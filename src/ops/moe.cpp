#include "ops/moe.h"

#include <algorithm>
#include <limits>
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

// The bytes of the grouping (offsets [E + 1], token and position [T·k], int32) and of the routing result.
int64_t grouping_bytes(const MoeShape& s) {
  return 4 * (s.E + 1) + 8 * s.T * s.top_k;
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
  if (E > kMoeMaxExperts)
    throw_error(ErrorCode::unsupported, "{}: {} experts (keel runs up to {} per layer)", kOp, E,
                kMoeMaxExperts);
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

GroupedMatmulArgs grouped_sizes(int64_t tokens, int64_t R, int64_t in, int64_t out, const WeightFormat& d,
                                bool gather) {
  GroupedMatmulArgs g;
  g.m.T = R, g.m.in = in, g.m.out = out;
  g.m.w_dtype = d.dtype, g.m.w_bits = d.bits, g.m.w_group_size = d.group_size;
  g.tokens = tokens;
  if (gather) g.x_rows = reinterpret_cast<const int32_t*>(&g);  // only "rows are gathered" matters here
  return g;
}

int64_t grouped_workspace(const Backend& be, int64_t tokens, int64_t R, int64_t in, int64_t out,
                          const WeightFormat& d, bool gather) {
  return be.grouped_matmul_workspace(grouped_sizes(tokens, R, in, out, d, gather));
}

// y [R, out] = for each expert e, its grouped rows of x (x row x_rows[i], or row i when x_rows is null) ·
// w[e]ᵀ; one backend call for all experts. The weights were checked by check_expert_weights.
void grouped_matmul(Backend& be, const Tensor& x, const Tensor* x_rows, const std::vector<Weight>& w,
                    const Tensor& offsets, int64_t tokens, Tensor& y) {
  const Weight& first = w[0];
  const int64_t E = static_cast<int64_t>(w.size());
  GroupedMatmulArgs g;
  g.m.x = static_cast<const char*>(x.data()), g.m.x_row_bytes = x.stride_bytes(0);
  g.m.w_row_bytes = first.data.stride_bytes(0);
  g.m.w_dtype = first.dtype();
  std::vector<const char*> ptrs(static_cast<size_t>(first.is_packed() ? 3 * E : E));
  for (int64_t e = 0; e < E; ++e) {
    if (w[e].data.stride_bytes(0) != g.m.w_row_bytes)
      throw_error(ErrorCode::invalid_argument, "{}: expert {}'s rows are {} bytes apart, expert 0's {}", kOp,
                  e, w[e].data.stride_bytes(0), g.m.w_row_bytes);
    if (first.is_packed() && (w[e].scales.stride_bytes(0) != first.scales.stride_bytes(0) ||
                              w[e].biases.stride_bytes(0) != first.scales.stride_bytes(0)))
      throw_error(ErrorCode::invalid_argument,
                  "{}: expert {}'s scales and biases rows are {} and {} bytes apart, expert 0's scales {}",
                  kOp, e, w[e].scales.stride_bytes(0), w[e].biases.stride_bytes(0),
                  first.scales.stride_bytes(0));
    ptrs[static_cast<size_t>(e)] = static_cast<const char*>(w[e].data.data());
    if (first.is_packed()) {
      ptrs[static_cast<size_t>(E + e)] = static_cast<const char*>(w[e].scales.data());
      ptrs[static_cast<size_t>(2 * E + e)] = static_cast<const char*>(w[e].biases.data());
    }
  }
  if (first.is_packed()) {
    g.m.w_scale_row_bytes = first.scales.stride_bytes(0);
    g.m.w_scale_dtype = first.scales.dtype();
    g.m.w_bits = first.bits, g.m.w_group_size = first.group_size;
    g.w_scales = ptrs.data() + E, g.w_biases = ptrs.data() + 2 * E;
  }
  g.w = ptrs.data();
  g.m.y = static_cast<char*>(y.data()), g.m.y_row_bytes = y.stride_bytes(0);
  g.m.T = y.dim(0), g.m.in = first.cols(), g.m.out = first.rows();
  g.offsets = offsets.ptr<const int32_t>();
  g.x_rows = x_rows ? x_rows->ptr<const int32_t>() : nullptr;
  g.E = E, g.tokens = tokens;
  be.grouped_matmul(g);
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
  const int64_t f = s.swiglu ? 2 : 1, R = s.T * s.top_k;
  // grouping + hidden [R, f·I] through the whole call; the up (and gate) products' workspace, then the
  // expert outputs [R, H] and the down product's workspace.
  return grouping_bytes(s) + 4 * R * f * s.I +
         std::max(grouped_workspace(be, s.T, R, s.H, s.I, s.weight_dtype, true),
                  4 * R * s.H +
                      grouped_workspace(be, s.T, R, s.I, s.H, s.down_dtype.value_or(s.weight_dtype), false));
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

  if (k < 1 || k > kMoeMaxTopK)
    throw_error(ErrorCode::invalid_argument, "{}: {} experts per token (1 to {})", kOp, k, kMoeMaxTopK);
  if (T * k > std::numeric_limits<int32_t>::max())
    throw_error(ErrorCode::invalid_argument, "{}: {} tokens × top_k {} pairs exceed int32", kOp, T, k);
  if (be.host_addressable()) {  // a device trusts its routing (moe_route's indices are in range by making)
    const int32_t* idx = indices.ptr<const int32_t>();
    for (int64_t i = 0; i < T * k; ++i) {
      if (idx[i] < 0 || idx[i] >= E)
        throw_error(ErrorCode::invalid_argument, "{}: token {} slot {} routes to expert {}, outside [0, {})",
                    kOp, i / k, i % k, idx[i], E);
      for (int64_t j = i - i % k; j < i; ++j)  // an expert holds at most T rows: once per token
        if (idx[j] == idx[i])
          throw_error(ErrorCode::invalid_argument, "{}: token {} routes to expert {} twice", kOp, i / k,
                      idx[i]);
    }
  }
  const int64_t R = T * k;

  // Group the (token, slot) pairs by expert on the backend, then each matrix of every expert in one call.
  Tensor offsets = Tensor::empty(be.pool(), DType::i32, {E + 1}, "moe expert offsets");
  Tensor token = Tensor::empty(be.pool(), DType::i32, {R}, "moe grouped tokens");
  Tensor position = Tensor::empty(be.pool(), DType::i32, {R}, "moe pair positions");
  be.moe_group(MoeGroupArgs{indices.ptr<const int32_t>(), T, k, E, offsets.ptr<int32_t>(),
                            token.ptr<int32_t>(), position.ptr<int32_t>()});
  Tensor hidden = Tensor::empty(be.pool(), DType::f32, {R, (swiglu ? 2 : 1) * I}, "moe expert hidden");
  Tensor act = hidden;  // the activation's output: [R, I]
  if (swiglu) {
    Tensor g = hidden.slice(1, 0, I), u = hidden.slice(1, I, I);
    grouped_matmul(be, x, &token, w.gate, offsets, T, g);
    grouped_matmul(be, x, &token, w.up, offsets, T, u);
    activation_mul(be, g, u, g, Activation::silu);
    act = g;
  } else {
    grouped_matmul(be, x, &token, w.up, offsets, T, hidden);
    ops::activation(be, hidden, hidden, Activation::relu2);
  }
  Tensor ye = Tensor::empty(be.pool(), DType::f32, {R, H}, "moe expert outputs");
  grouped_matmul(be, act, nullptr, w.down, offsets, T, ye);
  be.moe_combine(MoeCombineArgs{ye.ptr<const float>(), H, position.ptr<const int32_t>(),
                                weights.ptr<const float>(), T, k, H, out.ptr<float>(),
                                stride_floats(kOp, "out", out, 0)});
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
      be.scale_rows(
          ScaleRowsArgs{g.ptr<const float>(), T, H, out.ptr<float>(), stride_floats(kOp, "out", out, 0)});
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
