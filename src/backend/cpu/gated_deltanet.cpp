#include "backend/cpu/gated_deltanet.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cpu/vec_f32.h"
#include "core/tensor.h"

namespace keel::cpu {

namespace {

// g = −exp(A_log)·softplus(a + dt_bias) and β = sigmoid(b) of token t, value head h (fp32).
KEEL_INLINE void gates(const GatedDeltaNetArgs& a, int64_t t, int64_t h, float& g, float& beta) {
  const float x = a.a[t * a.a_st + h * a.a_sh] + a.dt_bias[h];
  g = a.neg_A[h] * (x > 20.0f ? x : std::log1p(std::exp(x)));
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
KEEL_INLINE void recurrent_head(const GatedDeltaNetArgs& a, int64_t h, float* ws) {
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
    gates(a, t, h, g, beta);
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

using HeadsFn = void (*)(const GatedDeltaNetArgs&, int64_t, int64_t, float*);

#define KEEL_GDN_KERNEL(name, target, W)                                          \
  target void name(const GatedDeltaNetArgs& a, int64_t b, int64_t e, float* ws) { \
    for (int64_t h = b; h < e; ++h) recurrent_head<W>(a, h, ws);                  \
  }

KEEL_GDN_KERNEL(heads_generic, , 4)
KEEL_GDN_KERNEL(heads_avx2, KEEL_TARGET_AVX2, 8)
KEEL_GDN_KERNEL(heads_avx512, KEEL_TARGET_AVX512, 16)

HeadsFn heads_kernel(CpuIsa isa) {
  if (isa >= CpuIsa::avx512) return heads_avx512;
  if (isa == CpuIsa::avx2) return heads_avx2;
  return heads_generic;
}

int64_t slot_floats(int64_t Dk, int64_t Dv) {
  return 3 * Dk + 2 * Dv;
}

}  // namespace

int64_t gated_deltanet_kernel_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int n_threads) {
  if (T == 0) return 0;
  return 4 * std::min<int64_t>(std::max(n_threads, 1), Hv) * slot_floats(Dk, Dv);
}

void gated_deltanet(CpuBackend& be, const GatedDeltaNetArgs& a) {
  if (a.T == 0) return;
  ThreadPool& pool = *be.threads();
  const int64_t slots = std::min<int64_t>(pool.size(), a.Hv), per_slot = slot_floats(a.Dk, a.Dv);
  Tensor ws = Tensor::empty(be.pool(), DType::f32, {slots * per_slot}, "gated_deltanet workspace");
  const HeadsFn fn = heads_kernel(be.isa());
  float* w = ws.ptr<float>();
  pool.parallel_for(a.Hv, [&](int64_t b, int64_t e, int worker) { fn(a, b, e, w + worker * per_slot); });
}

}  // namespace keel::cpu
