#include "backend/cpu/gated_deltanet.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cpu/vec_f32.h"
#include "core/tensor.h"

namespace keel::cpu {

namespace {

// g = −exp(A_log)·softplus(a + dt_bias) and β = sigmoid(b) of token t, value head h (fp32). par: [2, Hv],
// −exp(A_log) then dt_bias, widened to f32 (every function below takes it alongside the op's struct).
KEEL_INLINE void gates(const GatedDeltaNetArgs& a, const float* par, int64_t t, int64_t h, float& g,
                       float& beta) {
  const float x = a.a[t * a.a_st + h * a.a_sh] + par[a.Hv + h];
  g = par[h] * (x > 20.0f ? x : std::log1p(std::exp(x)));
  beta = 1.0f / (1.0f + std::exp(-a.b[t * a.b_st + h * a.b_sh]));
}

// dst = src · factor, times rsqrt(Σ src² + eps) when l2.
template <int W>
KEEL_INLINE void normalize(float* dst, const float* src, int64_t n, bool l2, float eps, float factor) {
  if (l2) factor *= 1.0f / std::sqrt(dot<W>(src, src, n) + eps);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

// Columns [p, p + CB·W) of one token's update of S [Dk, Dv], one pass over its rows d = 0, 1, …:
//   S[d] ← e·S[d] + k[d]·v';  o += q[d]·S[d];  kv_next += k_next[d]·S[d]   (the last when NEXT)
// Each element's arithmetic is in order d = 0, 1, … whatever the block width, and kv_next's is the one
// add_weighted_rows does (from zero), so kv_next is bit for bit the Sᵀk that the next call would compute.
template <int W, int CB, bool NEXT>
KEEL_INLINE void update_columns(float* S, int64_t Dk, int64_t Dv, int64_t p, float e, const float* kn,
                                const float* vp, const float* qn, const float* kn_next, float* o,
                                float* kv_next) {
  using V = VecF<W>;
  typename V::F vpc[CB], oc[CB], kc[CB];
  for (int c = 0; c < CB; ++c) vpc[c] = V::load(vp + p + c * W), oc[c] = typename V::F{}, kc[c] = oc[c];
  for (int64_t d = 0; d < Dk; ++d) {
    float* row = S + d * Dv + p;
    for (int c = 0; c < CB; ++c) {
      const typename V::F s = e * V::load(row + c * W) + kn[d] * vpc[c];
      V::store(row + c * W, s);
      oc[c] += qn[d] * s;
      if constexpr (NEXT) kc[c] += kn_next[d] * s;
    }
  }
  for (int c = 0; c < CB; ++c) {
    V::store(o + p + c * W, oc[c]);
    if constexpr (NEXT) V::store(kv_next + p + c * W, kc[c]);
  }
}

template <int W, bool NEXT>
KEEL_INLINE void update_state(float* S, int64_t Dk, int64_t Dv, float e, const float* kn, const float* vp,
                              const float* qn, const float* kn_next, float* o, float* kv_next) {
  constexpr int CB = W == 16 ? 4 : 2;  // vectors per column block: 3·CB accumulators in registers
  int64_t p = 0;
  for (; p + CB * W <= Dv; p += CB * W)
    update_columns<W, CB, NEXT>(S, Dk, Dv, p, e, kn, vp, qn, kn_next, o, kv_next);
  for (; p + W <= Dv; p += W) update_columns<W, 1, NEXT>(S, Dk, Dv, p, e, kn, vp, qn, kn_next, o, kv_next);
  for (; p < Dv; ++p) {
    float oj = 0, kj = 0;
    for (int64_t d = 0; d < Dk; ++d) {
      const float s = e * S[d * Dv + p] + kn[d] * vp[p];
      S[d * Dv + p] = s;
      oj += qn[d] * s;
      if constexpr (NEXT) kj += kn_next[d] * s;
    }
    o[p] = oj;
    if constexpr (NEXT) kv_next[p] = kj;
  }
}

// Value head h over the call's T tokens, one token at a time, S [Dk, Dv] updated in place. Worker scratch:
// qn [Dk], kn and kn_next [Dk] (swapped), kv [Dv] (Sᵀk of the state before the token's decay), v' [Dv].
template <int W>
KEEL_INLINE void recurrent_head(const GatedDeltaNetArgs& a, const float* par, int64_t h, float* ws) {
  const int64_t Dk = a.Dk, Dv = a.Dv, kh = h / (a.Hv / a.Hk);
  float* qn = ws;
  float* kn = qn + Dk;
  float* kn_next = kn + Dk;
  float* kv = kn_next + Dk;
  float* vp = kv + Dv;
  float* S = a.state + h * Dk * Dv;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(Dk));
  auto key = [&](float* dst, int64_t t) {
    normalize<W>(dst, a.k + t * a.k_st + kh * a.k_sh, Dk, a.qk_l2norm, a.eps, 1.0f);
  };
  key(kn, 0);
  std::fill_n(kv, Dv, 0.0f);
  add_weighted_rows<W>(kv, S, Dv, kn, Dk, Dv);
  for (int64_t t = 0; t < a.T; ++t) {
    normalize<W>(qn, a.q + t * a.q_st + kh * a.q_sh, Dk, a.qk_l2norm, a.eps, q_scale);
    float g, beta;
    gates(a, par, t, h, g, beta);
    const float e = std::exp(g);
    // v' = β(v − (e^g S)ᵀk), with (e^g S)ᵀk = e^g·kv.
    const float* v = a.v + t * a.v_st + h * a.v_sh;
    for (int64_t j = 0; j < Dv; ++j) vp[j] = beta * (v[j] - e * kv[j]);
    float* o = a.out + t * a.o_st + h * a.o_sh;
    if (t + 1 < a.T) {
      key(kn_next, t + 1);
      update_state<W, true>(S, Dk, Dv, e, kn, vp, qn, kn_next, o, kv);
      std::swap(kn, kn_next);
    } else {
      update_state<W, false>(S, Dk, Dv, e, kn, vp, qn, nullptr, o, nullptr);
    }
  }
}

// T > 1 with C > 0: the chunked WY form over chunks of Ce = min(C, T) tokens. Worker scratch
// (Cp = pad16(Ce)): Qn, Kn, Wn [Ce, Dk], U [Ce, Dv], A [Ce, Cp], γ, β [Cp], tmp [max(Cp, pad16(Dk))],
// Kt [Dk, Cp]. Reference: ops/reference/gated_deltanet_ref.h (the recurrence; same result in exact math).
template <int W>
KEEL_INLINE void chunked_head(const GatedDeltaNetArgs& a, const float* par, int64_t h, float* ws) {
  const int64_t Dk = a.Dk, Dv = a.Dv, kh = h / (a.Hv / a.Hk);
  const int64_t Ce = std::min(a.C, a.T), Cp = pad16(Ce);
  float* Qn = ws;
  float* Kn = Qn + Ce * Dk;
  float* Wn = Kn + Ce * Dk;
  float* U = Wn + Ce * Dk;
  float* A = U + Ce * Dv;
  float* gam = A + Ce * Cp;
  float* dec = gam + Cp;  // β, then the state-update decays
  float* tmp = dec + Cp;
  float* Kt = tmp + std::max(Cp, pad16(Dk));  // [Dk, Cp]
  float* S = a.state + h * Dk * Dv;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(Dk));
  for (int64_t t0 = 0; t0 < a.T; t0 += Ce) {
    const int64_t Cc = std::min(Ce, a.T - t0);
    float run = 0;
    for (int64_t i = 0; i < Cc; ++i) {
      const int64_t t = t0 + i;
      normalize<W>(Qn + i * Dk, a.q + t * a.q_st + kh * a.q_sh, Dk, a.qk_l2norm, a.eps, q_scale);
      normalize<W>(Kn + i * Dk, a.k + t * a.k_st + kh * a.k_sh, Dk, a.qk_l2norm, a.eps, 1.0f);
      float g;
      gates(a, par, t, h, g, dec[i]);
      run += g;
      gam[i] = run;  // chunk-local inclusive cumsum γ
    }
    // A[i][j] = β_i (k_i·k_j) e^{γ_i − γ_j} for j < i.
    for (int64_t i = 1; i < Cc; ++i) {
      float* row = A + i * Cp;
      for (int64_t j = 0; j < i; ++j) row[j] = gam[i] - gam[j];
      exp_inplace_padded<W>(row, i);
      for (int64_t j = 0; j < i; ++j) row[j] *= dec[i] * dot<W>(Kn + i * Dk, Kn + j * Dk, Dk);
    }
    // Forward substitution through (I + A): U = (I + A)⁻¹ diag(β) V, Wn = −(I + A)⁻¹ diag(β) (K ⊙ e^γ).
    for (int64_t i = 0; i < Cc; ++i) {
      const float* vi = a.v + (t0 + i) * a.v_st + h * a.v_sh;
      float* Ui = U + i * Dv;
      float* Wi = Wn + i * Dk;
      for (int64_t j = 0; j < Dv; ++j) Ui[j] = dec[i] * vi[j];
      const float kw = -dec[i] * std::exp(gam[i]);
      for (int64_t d = 0; d < Dk; ++d) Wi[d] = kw * Kn[i * Dk + d];
      for (int64_t j = 0; j < i; ++j) tmp[j] = -A[i * Cp + j];
      add_weighted_rows<W>(Ui, U, Dv, tmp, i, Dv);
      add_weighted_rows<W>(Wi, Wn, Dk, tmp, i, Dk);
    }
    // V_new = U − W·S (in U).
    add_weighted_rows_multi<W>(U, Dv, Wn, Dk, Cc, S, Dv, Dk, Dv);
    // o_i = (q_i e^{γ_i})·S + Σ_{j ≤ i} (q_i·k_j) e^{γ_i − γ_j} V_new_j. Wn's rows now hold q_i e^{γ_i}, A's
    // first four rows the intra-chunk coefficients of four outputs (zeros right of the diagonal).
    float* o0 = a.out + t0 * a.o_st + h * a.o_sh;
    for (int64_t i = 0; i < Cc; ++i) {
      const float e = std::exp(gam[i]);
      for (int64_t d = 0; d < Dk; ++d) Wn[i * Dk + d] = Qn[i * Dk + d] * e;
      std::fill_n(o0 + i * a.o_st, Dv, 0.0f);
    }
    add_weighted_rows_multi<W>(o0, a.o_st, Wn, Dk, Cc, S, Dv, Dk, Dv);
    for (int64_t i0 = 0; i0 < Cc; i0 += 4) {
      const int64_t rows = std::min<int64_t>(4, Cc - i0), n = i0 + rows;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float* m = A + r * Cp;
        for (int64_t j = 0; j <= i; ++j) m[j] = gam[i] - gam[j];
        exp_inplace_padded<W>(m, i + 1);
        for (int64_t j = 0; j <= i; ++j) m[j] *= dot<W>(Qn + i * Dk, Kn + j * Dk, Dk);
        for (int64_t j = i + 1; j < n; ++j) m[j] = 0;
      }
      add_weighted_rows_multi<W>(o0 + i0 * a.o_st, a.o_st, A, Cp, rows, U, Dv, n, Dv);
    }
    // S ← e^{γ_last} S + Σ_j (k_j e^{γ_last − γ_j}) ⊗ V_new_j, with Kt[d][j] = k_j[d]·e^{γ_last − γ_j}.
    const float last = gam[Cc - 1];
    for (int64_t j = 0; j < Cc; ++j) dec[j] = last - gam[j];
    exp_inplace_padded<W>(dec, Cc);
    for (int64_t j = 0; j < Cc; ++j)
      for (int64_t d = 0; d < Dk; ++d) Kt[d * Cp + j] = Kn[j * Dk + d] * dec[j];
    scale<W>(S, std::exp(last), Dk * Dv);
    add_weighted_rows_multi<W>(S, Dv, Kt, Cp, Dk, U, Dv, Cc, Dv);
  }
}

using HeadsFn = void (*)(const GatedDeltaNetArgs&, const float*, int64_t, int64_t, float*);

#define KEEL_GDN_KERNEL(name, target, W)                                                            \
  target void name(const GatedDeltaNetArgs& a, const float* par, int64_t b, int64_t e, float* ws) { \
    for (int64_t h = b; h < e; ++h) {                                                               \
      if (a.C > 0 && a.T > 1)                                                                       \
        chunked_head<W>(a, par, h, ws);                                                             \
      else                                                                                          \
        recurrent_head<W>(a, par, h, ws);                                                           \
    }                                                                                               \
  }

KEEL_GDN_KERNEL(heads_generic, , 4)
KEEL_GDN_KERNEL(heads_avx2, KEEL_TARGET_AVX2, 8)
KEEL_GDN_KERNEL(heads_avx512, KEEL_TARGET_AVX512, 16)

HeadsFn heads_kernel(CpuIsa isa) {
  if (isa >= CpuIsa::avx512) return heads_avx512;
  if (isa == CpuIsa::avx2) return heads_avx2;
  return heads_generic;
}

// Floats of one worker's scratch (ops/gated_deltanet.h gives the same formula).
int64_t slot_floats(int64_t T, int64_t Dk, int64_t Dv, int64_t C) {
  if (C <= 0 || T <= 1) return 3 * Dk + 2 * Dv;
  const int64_t Ce = std::min(C, T), Cp = pad16(Ce);
  return Ce * (3 * Dk + Dv + Cp) + 2 * Cp + std::max(Cp, pad16(Dk)) + Dk * Cp;
}

}  // namespace

int64_t gated_deltanet_kernel_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int64_t C,
                                              int n_threads) {
  if (T == 0) return 0;
  return 4 * std::min<int64_t>(std::max(n_threads, 1), Hv) * slot_floats(T, Dk, Dv, C);
}

void gated_deltanet(CpuBackend& be, const GatedDeltaNetArgs& a) {
  if (a.T == 0) return;
  const int64_t Hv = a.Hv;
  // −exp(A_log) and dt_bias widened to f32 once (the 2·Hv floats of the workspace).
  Tensor params = Tensor::empty(be.pool(), DType::f32, {2, Hv}, "gated_deltanet parameters");
  float* par = params.ptr<float>();
  for (int64_t h = 0; h < Hv; ++h) {
    par[h] = -std::exp(a.A_log.at(h));
    par[Hv + h] = a.dt_bias.at(h);
  }
  ThreadPool& pool = *be.threads();
  const int64_t slots = std::min<int64_t>(pool.size(), a.Hv), per_slot = slot_floats(a.T, a.Dk, a.Dv, a.C);
  Tensor ws = Tensor::empty(be.pool(), DType::f32, {slots * per_slot}, "gated_deltanet workspace");
  if (a.C > 0 && a.T > 1)  // the WY form reads padded row tails with whole-vector exp: keep them finite
    std::fill_n(ws.ptr<float>(), ws.numel(), 0.0f);
  const HeadsFn fn = heads_kernel(be.isa());
  float* w = ws.ptr<float>();
  pool.parallel_for(a.Hv, [&](int64_t b, int64_t e, int worker) { fn(a, par, b, e, w + worker * per_slot); });
}

}  // namespace keel::cpu

namespace keel {

int64_t CpuBackend::gated_deltanet_workspace(const GatedDeltaNetArgs& a) const {
  if (a.T == 0) return 0;
  return 4 * 2 * a.Hv + cpu::gated_deltanet_kernel_workspace_bytes(a.T, a.Hv, a.Dk, a.Dv, a.C, workers());
}

void CpuBackend::gated_deltanet(const GatedDeltaNetArgs& a) {
  cpu::gated_deltanet(*this, a);
}

}  // namespace keel
