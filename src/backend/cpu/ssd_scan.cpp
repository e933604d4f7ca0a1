#include "backend/cpu/ssd_scan.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/vec_f32.h"
#include "core/tensor.h"

namespace keel::cpu {

namespace {

// par: [3, H], A = −exp(A_log), dt_bias and D widened to f32 (every function below takes it alongside the
// op's struct).
KEEL_INLINE float dt_of(const SsdScanArgs& a, const float* par, int64_t t, int64_t h) {
  float v = a.dt[t * a.dt_st + h * a.dt_sh] + par[a.H + h];
  float sp = v > 20.0f ? v : std::log1p(std::exp(v));
  return std::min(std::max(sp, a.dt_min), a.dt_max);
}

// T = 1: S ← e^{dt·A}·S + dt·x⊗B and y = S·C + D·x in one pass over S.
template <int W>
KEEL_INLINE void decode_heads(const SsdScanArgs& a, const float* par, int64_t h_begin, int64_t h_end) {
  using V = VecF<W>;
  const int64_t heads_per_group = a.H / a.G, N = a.N;
  const float* A = par;
  const float* D = par + 2 * a.H;
  for (int64_t h = h_begin; h < h_end; ++h) {
    const int64_t g = h / heads_per_group;
    const float dt = dt_of(a, par, 0, h), decay = std::exp(dt * A[h]);
    const float* x = a.x + h * a.x_sh;
    const float* B = a.B + g * a.B_sg;
    const float* C = a.C + g * a.C_sg;
    float* y = a.y + h * a.y_sh;
    for (int64_t p = 0; p < a.P; ++p) {
      float* s = a.state + (h * a.P + p) * N;
      const float coef = dt * x[p];
      typename V::F acc{};
      int64_t n = 0;
      for (; n + W <= N; n += W) {
        typename V::F sv = decay * V::load(s + n) + coef * V::load(B + n);
        V::store(s + n, sv);
        acc += sv * V::load(C + n);
      }
      float out = V::hsum(acc);
      for (; n < N; ++n) {
        s[n] = decay * s[n] + coef * B[n];
        out += s[n] * C[n];
      }
      y[p] = out + D[h] * x[p];
    }
  }
}

// One chunk of Qc tokens starting at t0, shared by both phases.
struct Chunk {
  const SsdScanArgs* a;
  const float* par;  // [3, H]: A, dt_bias, D
  int64_t t0, Qc;
  float* cb;       // [G, Qe, row] C_i·B_j for j ≤ i
  int64_t cb_row;  // pad16(Qe)
  float* scratch;  // per worker: dt, cumsum, coefficients, each cb_row floats
};

// CB[g][i][j] = C[t0+i, g] · B[t0+j, g] for j ≤ i; rows r ∈ [begin, end) of the G·Qc (group, i) pairs.
template <int W>
KEEL_INLINE void cb_rows(const Chunk& c, int64_t begin, int64_t end) {
  const SsdScanArgs& a = *c.a;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t g = r / c.Qc, i = r % c.Qc;
    const float* Ci = a.C + (c.t0 + i) * a.C_st + g * a.C_sg;
    float* out = c.cb + (g * c.Qc + i) * c.cb_row;
    for (int64_t j = 0; j <= i; ++j) out[j] = dot<W>(Ci, a.B + (c.t0 + j) * a.B_st + g * a.B_sg, a.N);
  }
}

// Per-worker scratch of the chunked path, in floats: dt, Λ (row each), M (4 rows), Sᵀ (N·P), Xw (P rows).
constexpr int64_t scratch_floats(int64_t row, int64_t P, int64_t N) {
  return 6 * row + N * P + P * row;
}

template <int W>
KEEL_INLINE void chunk_heads(const Chunk& c, int64_t h_begin, int64_t h_end, int worker) {
  const SsdScanArgs& a = *c.a;
  const int64_t heads_per_group = a.H / a.G, P = a.P, N = a.N, Qc = c.Qc, t0 = c.t0;
  const int64_t row = c.cb_row;
  const float* A = c.par;
  const float* D = c.par + 2 * a.H;
  float* dt = c.scratch + worker * scratch_floats(row, P, N);
  float* lam = dt + row;
  float* M = lam + row;     // [4, row]: four rows of the intra-chunk matrix CB[i,j]·e^{Λ_i − Λ_j}·dt_j
  float* St = M + 4 * row;  // [N, P]: the carried-in state transposed, so S·C_i is a sum of rows
  float* Xw = St + N * P;   // [P, row]: e^{Λ_last − Λ_j}·dt_j·x_j[p], the state update's coefficients
  for (int64_t h = h_begin; h < h_end; ++h) {
    const int64_t g = h / heads_per_group;
    // dt and the chunk-local inclusive cumsum Λ_i = Σ_{k ≤ i} dt_k·A (fp32, restarted every chunk).
    float run = 0;
    for (int64_t i = 0; i < Qc; ++i) {
      dt[i] = dt_of(a, c.par, t0 + i, h);
      run += dt[i] * A[h];
      lam[i] = run;
    }
    float* S = a.state + h * P * N;
    const float* x0 = a.x + t0 * a.x_st + h * a.x_sh;
    const float* B0 = a.B + t0 * a.B_st + g * a.B_sg;
    const float* C0 = a.C + t0 * a.C_st + g * a.C_sg;
    float* y0 = a.y + t0 * a.y_st + h * a.y_sh;
    // y_i = e^{Λ_i}·(S·C_i) + D·x_i from the state carried in ...
    for (int64_t p = 0; p < P; ++p)
      for (int64_t n = 0; n < N; ++n) St[n * P + p] = S[p * N + n];
    for (int64_t i = 0; i < Qc; ++i) std::fill_n(y0 + i * a.y_st, P, 0.0f);
    add_weighted_rows_multi<W>(y0, a.y_st, C0, a.C_st, Qc, St, P, N, P);
    for (int64_t i = 0; i < Qc; ++i) {
      const float e = std::exp(lam[i]);
      const float* xi = x0 + i * a.x_st;
      float* yi = y0 + i * a.y_st;
      for (int64_t p = 0; p < P; ++p) yi[p] = e * yi[p] + D[h] * xi[p];
    }
    // ... + Σ_{j ≤ i} CB[i,j]·e^{Λ_i − Λ_j}·dt_j·x_j, four rows i at a time (zeros right of the diagonal).
    for (int64_t i0 = 0; i0 < Qc; i0 += 4) {
      const int64_t rows = std::min<int64_t>(4, Qc - i0), n = i0 + rows;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float* m = M + r * row;
        for (int64_t j = 0; j <= i; ++j) m[j] = lam[i] - lam[j];
        exp_inplace_padded<W>(m, i + 1);
        const float* cb = c.cb + (g * Qc + i) * row;
        for (int64_t j = 0; j <= i; ++j) m[j] *= cb[j] * dt[j];
        for (int64_t j = i + 1; j < n; ++j) m[j] = 0;
      }
      add_weighted_rows_multi<W>(y0 + i0 * a.y_st, a.y_st, M, row, rows, x0, a.x_st, n, P);
    }
    // S ← e^{Λ_last}·S + Σ_j e^{Λ_last − Λ_j}·dt_j·(x_j ⊗ B_j).
    const float last = lam[Qc - 1];
    for (int64_t j = 0; j < Qc; ++j) lam[j] = last - lam[j];
    exp_inplace_padded<W>(lam, Qc);
    for (int64_t j = 0; j < Qc; ++j) dt[j] *= lam[j];
    for (int64_t j = 0; j < Qc; ++j)
      for (int64_t p = 0; p < P; ++p) Xw[p * row + j] = dt[j] * x0[j * a.x_st + p];
    scale<W>(S, std::exp(last), P * N);
    add_weighted_rows_multi<W>(S, N, Xw, row, P, B0, a.B_st, Qc, N);
  }
}

struct Kernels {
  void (*decode)(const SsdScanArgs&, const float*, int64_t, int64_t);
  void (*cb)(const Chunk&, int64_t, int64_t);
  void (*heads)(const Chunk&, int64_t, int64_t, int);
};

#define KEEL_SSD_KERNELS(name, target, W)                                                   \
  target void name##_decode(const SsdScanArgs& a, const float* par, int64_t b, int64_t e) { \
    decode_heads<W>(a, par, b, e);                                                          \
  }                                                                                         \
  target void name##_cb(const Chunk& c, int64_t b, int64_t e) {                             \
    cb_rows<W>(c, b, e);                                                                    \
  }                                                                                         \
  target void name##_heads(const Chunk& c, int64_t b, int64_t e, int w) {                   \
    chunk_heads<W>(c, b, e, w);                                                             \
  }                                                                                         \
  constexpr Kernels name{name##_decode, name##_cb, name##_heads};

KEEL_SSD_KERNELS(k_generic, , 4)
KEEL_SSD_KERNELS(k_avx2, KEEL_TARGET_AVX2, 8)
KEEL_SSD_KERNELS(k_avx512, KEEL_TARGET_AVX512, 16)

const Kernels& kernels_for(CpuIsa isa) {
  if (isa >= CpuIsa::avx512) return k_avx512;
  if (isa == CpuIsa::avx2) return k_avx2;
  return k_generic;
}

}  // namespace

int64_t ssd_scan_kernel_workspace_bytes(int64_t T, int64_t H, int64_t P, int64_t G, int64_t N, int64_t Q,
                                        int n_threads) {
  if (T <= 1) return 0;
  const int64_t Qe = std::min(Q, T), row = pad16(Qe);
  const int64_t slots = std::min<int64_t>(std::max(n_threads, 1), H);
  return 4 * (G * Qe * row + slots * scratch_floats(row, P, N));
}

void ssd_scan(CpuBackend& be, const SsdScanArgs& a) {
  const Kernels& k = kernels_for(be.isa());
  ThreadPool& pool = *be.threads();
  if (a.T == 0) return;
  const int64_t H = a.H;
  // A = −exp(A_log), dt_bias and D widened to f32 once (the 3·H floats of the workspace).
  Tensor params = Tensor::empty(be.pool(), DType::f32, {3, H}, "ssd_scan parameters");
  float* par = params.ptr<float>();
  for (int64_t h = 0; h < H; ++h) {
    par[h] = -std::exp(a.A_log.at(h));
    par[H + h] = a.dt_bias.at(h);
    par[2 * H + h] = a.D.at(h);
  }
  if (a.T == 1) {
    pool.parallel_for(a.H, [&](int64_t b, int64_t e, int) { k.decode(a, par, b, e); });
    return;
  }
  const int64_t Qe = std::min(a.Q, a.T), row = pad16(Qe);
  const int64_t slots = std::min<int64_t>(pool.size(), a.H);
  Tensor ws = Tensor::empty(be.pool(), DType::f32, {a.G * Qe * row + slots * scratch_floats(row, a.P, a.N)},
                            "ssd_scan workspace");
  std::fill_n(ws.ptr<float>(), ws.numel(),
              0.0f);  // padded tails are read by whole-vector exp; keep them finite
  Chunk c{&a, par, 0, 0, ws.ptr<float>(), row, ws.ptr<float>() + a.G * Qe * row};
  for (int64_t t0 = 0; t0 < a.T; t0 += Qe) {
    c.t0 = t0;
    c.Qc = std::min(Qe, a.T - t0);
    pool.parallel_for(a.G * c.Qc, [&](int64_t b, int64_t e, int) { k.cb(c, b, e); });
    pool.parallel_for(a.H, [&](int64_t b, int64_t e, int w) { k.heads(c, b, e, w); });
  }
}

}  // namespace keel::cpu

namespace keel {

int64_t CpuBackend::ssd_scan_workspace(const SsdScanArgs& a) const {
  return 4 * 3 * a.H + cpu::ssd_scan_kernel_workspace_bytes(a.T, a.H, a.P, a.G, a.N, a.Q, workers());
}

void CpuBackend::ssd_scan(const SsdScanArgs& a) {
  cpu::ssd_scan(*this, a);
}

}  // namespace keel
