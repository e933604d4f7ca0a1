// The reference backend's stateful and heavy ops: conv1d, SSD, Gated DeltaNet (both forms run the
// token-by-token recurrence), attention (full softmax), MoE routing (sorted), grouping and combine. The
// carried states are read into double, updated by the reference, and rounded back to f32 at the call's end.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "backend/moe_host.h"
#include "backend/reference/reference_backend.h"
#include "backend/reference/reference_util.h"
#include "ops/reference/attention_ref.h"
#include "ops/reference/conv1d_ref.h"
#include "ops/reference/gated_deltanet_ref.h"
#include "ops/reference/moe_ref.h"
#include "ops/reference/ssd_scan_ref.h"

namespace keel {

using namespace reference_util;

namespace {
std::vector<double> params(const ParamVec& p, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = p.at(i);
  return v;
}
}  // namespace

void ReferenceBackend::causal_conv1d(const Conv1dArgs& a) {
  const int64_t T = a.T, C = a.C, K = a.K;
  std::vector<double> x = read_3d(a.x, a.x_row, 0, T, 1, C), w(static_cast<size_t>(C * K));
  for (int64_t c = 0; c < C; ++c)
    widen(static_cast<const char*>(a.w) + c * a.w_row * dtype_info(a.w_dtype).block_bytes, a.w_dtype, K,
          &w[static_cast<size_t>(c * K)]);
  std::vector<double> bias = a.bias.data ? params(a.bias, C) : std::vector<double>();
  std::vector<double> state = read_row(a.state, (K - 1) * C);
  write_3d(ref::causal_conv1d(x, w, bias, state, T, C, K, a.silu), a.out, a.out_row, 0, T, 1, C);
  write_row(state, a.state);
}

void ReferenceBackend::ssd_scan(const SsdScanArgs& a) {
  if (a.T == 0) return;
  const ref::SsdShape s{a.T, a.H, a.P, a.G, a.N};
  std::vector<double> state = read_row(a.state, a.H * a.P * a.N);
  const std::vector<double> y = ref::ssd_scan(
      s, read_3d(a.x, a.x_st, a.x_sh, a.T, a.H, a.P), read_3d(a.dt, a.dt_st, a.dt_sh, a.T, a.H, 1),
      read_3d(a.B, a.B_st, a.B_sg, a.T, a.G, a.N), read_3d(a.C, a.C_st, a.C_sg, a.T, a.G, a.N),
      params(a.A_log, a.H), params(a.dt_bias, a.H), params(a.D, a.H), a.dt_min, a.dt_max, state);
  write_3d(y, a.y, a.y_st, a.y_sh, a.T, a.H, a.P);
  write_row(state, a.state);
}

void ReferenceBackend::gated_deltanet(const GatedDeltaNetArgs& a) {
  if (a.T == 0) return;
  const ref::GatedDeltaNetShape s{a.T, a.Hk, a.Hv, a.Dk, a.Dv};
  std::vector<double> state = read_row(a.state, a.Hv * a.Dk * a.Dv);
  const std::vector<double> out = ref::gated_deltanet(
      s, read_3d(a.q, a.q_st, a.q_sh, a.T, a.Hk, a.Dk), read_3d(a.k, a.k_st, a.k_sh, a.T, a.Hk, a.Dk),
      read_3d(a.v, a.v_st, a.v_sh, a.T, a.Hv, a.Dv), read_3d(a.a, a.a_st, a.a_sh, a.T, a.Hv, 1),
      read_3d(a.b, a.b_st, a.b_sh, a.T, a.Hv, 1), params(a.A_log, a.Hv), params(a.dt_bias, a.Hv), a.qk_l2norm,
      a.eps, state);
  write_3d(out, a.out, a.o_st, a.o_sh, a.T, a.Hv, a.Dv);
  write_row(state, a.state);
}

// The cache's rows as doubles: f32, or f16 bits widened (exact).
static std::vector<double> read_cache(const void* p, DType dtype, int64_t st, int64_t sh, int64_t rows,
                                      int64_t heads, int64_t n) {
  if (dtype != DType::f16) return read_3d(static_cast<const float*>(p), st, sh, rows, heads, n);
  const auto* h = static_cast<const uint16_t*>(p);
  std::vector<double> v(static_cast<size_t>(rows * heads * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t hd = 0; hd < heads; ++hd)
      for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>((r * heads + hd) * n + i)] = f16_to_f32(h[r * st + hd * sh + i]);
  return v;
}

void ReferenceBackend::convert(const ConvertArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    if (a.dst_dtype == DType::f16)
      static_cast<uint16_t*>(a.dst)[i] = f32_to_f16(a.src[i]);
    else
      static_cast<float*>(a.dst)[i] = a.src[i];
  }
}

void ReferenceBackend::attention(const AttentionArgs& a) {
  if (a.T == 0) return;
  const int64_t kv_len = a.offset + a.T;
  const std::vector<double> out = ref::attention(
      a.T, a.n_q, a.n_kv, a.D, a.Dv, a.offset, a.scale, read_3d(a.q, a.q_st, a.q_sh, a.T, a.n_q, a.D),
      read_cache(a.k, a.kv_dtype, a.k_st, a.k_sh, kv_len, a.n_kv, a.D),
      read_cache(a.v, a.kv_dtype, a.v_st, a.v_sh, kv_len, a.n_kv, a.Dv));
  write_3d(out, a.out, a.o_st, a.o_sh, a.T, a.n_q, a.Dv);
}

void ReferenceBackend::moe_route(const MoeRouteArgs& a) {
  ref::MoeConfig c;
  c.sigmoid_grouped = a.sigmoid_grouped;
  c.top_k = a.top_k, c.n_group = a.n_group, c.topk_group = a.topk_group;
  c.norm_topk_prob = a.norm_topk_prob, c.scaling = a.scaling;
  const ref::MoeRouting r = ref::moe_route(c, a.T, a.E, read_3d(a.logits, a.logits_st, 0, a.T, 1, a.E),
                                           a.bias.data ? params(a.bias, a.E) : std::vector<double>());
  for (int64_t i = 0; i < a.T * a.top_k; ++i) {
    a.indices[i] = static_cast<int32_t>(r.indices[static_cast<size_t>(i)]);
    a.weights[i] = static_cast<float>(r.weights[static_cast<size_t>(i)]);
  }
}

void ReferenceBackend::moe_group(const MoeGroupArgs& a) {
  host_moe::group(a);
}

// The experts' products through this backend's own (float64) matmul, expert by expert.
void ReferenceBackend::grouped_matmul(const GroupedMatmulArgs& a) {
  std::vector<float> gather(static_cast<size_t>(host_moe::gather_bytes(a) / 4));
  host_moe::grouped_matmul(*this, a, gather.data());
}

// Each slot's term added in double and rounded to f32, slots in ascending position (as the CPU orders them).
void ReferenceBackend::moe_combine(const MoeCombineArgs& a) {
  for (int64_t t = 0; t < a.T; ++t) {
    std::vector<std::pair<int32_t, float>> slots;
    for (int64_t j = 0; j < a.k; ++j)
      if (a.position[t * a.k + j] >= 0) slots.emplace_back(a.position[t * a.k + j], a.weights[t * a.k + j]);
    std::sort(slots.begin(), slots.end());
    float* d = a.out + t * a.out_st;
    for (const auto& [pos, c] : slots)
      for (int64_t i = 0; i < a.H; ++i)
        d[i] = static_cast<float>(double(d[i]) + double(c) * double(a.y[pos * a.y_st + i]));
  }
}

void ReferenceBackend::scale_rows(const ScaleRowsArgs& a) {
  for (int64_t r = 0; r < a.n; ++r)
    for (int64_t i = 0; i < a.width; ++i)
      a.dst[r * a.dst_st + i] = static_cast<float>(double(a.dst[r * a.dst_st + i]) * double(a.scale[r]));
}

}  // namespace keel
