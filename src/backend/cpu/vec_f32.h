// Fixed-width f32 vectors (GCC vector extensions) for the CPU kernels of the stateful ops (SSD, DeltaNet,
// attention). A kernel body is a template on the width W — 4 (baseline SSE2), 8 (AVX2), 16 (AVX-512) — that
// is force-inlined into entry points compiled with KEEL_TARGET_AVX2 / KEEL_TARGET_AVX512, so one source
// yields each ISA's code while the build stays generic x86-64. Everything here is always_inline: a vector
// never crosses an out-of-line call, which is why the psabi notes GCC gives for wide vector arguments do not
// apply (silenced here for the files that include this header, which are kernel files only).
//
// Reductions (hsum, hmax) use a fixed pairwise tree, so a result depends only on W and the element count,
// never on what else is in the call: the batch-invariance rule of docs/OPS.md.
#pragma once
#pragma GCC diagnostic ignored "-Wpsabi"

#include <cstdint>
#include <cstring>

#define KEEL_INLINE inline __attribute__((always_inline))
#define KEEL_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KEEL_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace keel::cpu {

typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x16 __attribute__((vector_size(64)));
typedef int32_t i32x4 __attribute__((vector_size(16)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef int32_t i32x16 __attribute__((vector_size(64)));

// (GCC 12 mistakes a vector_size that depends on a template parameter for a scalar, hence the fixed
// typedefs.)
template <int W>
struct VecTypes;
template <>
struct VecTypes<4> {
  using F = f32x4;
  using I = i32x4;
};
template <>
struct VecTypes<8> {
  using F = f32x8;
  using I = i32x8;
};
template <>
struct VecTypes<16> {
  using F = f32x16;
  using I = i32x16;
};

template <int W>
struct VecF {
  using F = typename VecTypes<W>::F;
  using I = typename VecTypes<W>::I;

  static KEEL_INLINE F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static KEEL_INLINE void store(float* p, const F& v) { std::memcpy(p, &v, sizeof v); }
  static KEEL_INLINE F splat(float x) { return F{} + x; }

  // The pairwise tree a[i] += a[i + s] for s = W/2, …, 1, as halving shuffles.
  static KEEL_INLINE float hsum(const F& v) {
    if constexpr (W == 16) {
      return VecF<8>::hsum(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                           __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
    } else if constexpr (W == 8) {
      return VecF<4>::hsum(__builtin_shufflevector(v, v, 0, 1, 2, 3) +
                           __builtin_shufflevector(v, v, 4, 5, 6, 7));
    } else {
      return (v[0] + v[2]) + (v[1] + v[3]);
    }
  }
  static KEEL_INLINE float hmax(const F& v) {
    float a[W];
    std::memcpy(a, &v, sizeof a);
    float m = a[0];
    for (int i = 1; i < W; ++i) m = a[i] > m ? a[i] : m;
    return m;
  }
  static KEEL_INLINE F max(const F& a, const F& b) { return a > b ? a : b; }

  // e^x with relative error ~2 ulp (Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, degree-6 polynomial in r, then
  // 2^n through the exponent bits). Exactly 0 below −87.3 (where expf turns subnormal), +inf above 88.3.
  static KEEL_INLINE F exp(const F& x0) {
    const F lo = splat(-87.3f), hi = splat(88.3f);
    F x = x0 < lo ? lo : x0;
    x = x > hi ? hi : x;
    F f = x * 1.44269504088896341f + 0.5f;
    F n = __builtin_convertvector(__builtin_convertvector(f, I), F);  // truncates toward zero
    n = n - __builtin_convertvector(-(n > f), F);                     // floor: subtract 1 where n > f
    F r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    F p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    I bits = (__builtin_convertvector(n, I) + 127) << 23;
    F scale;
    std::memcpy(&scale, &bits, sizeof scale);
    F out = p * scale;
    out = x0 < lo ? F{} : out;
    const F inf = splat(__builtin_inff());
    return x0 > hi ? inf : out;
  }
};

// dot(a, b) over n floats: W-wide partial sums in order, then the fixed tree, then the tail in order.
template <int W>
KEEL_INLINE float dot(const float* a, const float* b, int64_t n) {
  using V = VecF<W>;
  typename V::F acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 += V::load(a + i) * V::load(b + i);
    acc1 += V::load(a + i + W) * V::load(b + i + W);
  }
  for (; i + W <= n; i += W) acc0 += V::load(a + i) * V::load(b + i);
  float s = V::hsum(acc0 + acc1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y[0, len) += Σ_{j < n_rows} coef[j] · rows[j·stride + (0, len)], rows accumulated in order j = 0, 1, ...
template <int W>
KEEL_INLINE void add_weighted_rows(float* y, const float* rows, int64_t stride, const float* coef,
                                   int64_t n_rows, int64_t len) {
  using V = VecF<W>;
  int64_t p = 0;
  for (; p + 4 * W <= len; p += 4 * W) {
    typename V::F a0 = V::load(y + p), a1 = V::load(y + p + W), a2 = V::load(y + p + 2 * W),
                  a3 = V::load(y + p + 3 * W);
    for (int64_t j = 0; j < n_rows; ++j) {
      const float* r = rows + j * stride + p;
      const float c = coef[j];
      a0 += c * V::load(r);
      a1 += c * V::load(r + W);
      a2 += c * V::load(r + 2 * W);
      a3 += c * V::load(r + 3 * W);
    }
    V::store(y + p, a0), V::store(y + p + W, a1), V::store(y + p + 2 * W, a2), V::store(y + p + 3 * W, a3);
  }
  for (; p + W <= len; p += W) {
    typename V::F a0 = V::load(y + p);
    for (int64_t j = 0; j < n_rows; ++j) a0 += coef[j] * V::load(rows + j * stride + p);
    V::store(y + p, a0);
  }
  for (; p < len; ++p) {
    float s = y[p];
    for (int64_t j = 0; j < n_rows; ++j) s += coef[j] * rows[j * stride + p];
    y[p] = s;
  }
}

// The same for R ≤ 4 output rows at once: Y[r·y_st + (0, len)] += Σ_{j < n_rows} coef[r·c_st + j] ·
// rows[j·stride
// + (0, len)] — a small GEMM whose row loads are shared by the R outputs. Each element's arithmetic (its FMAs
// in order j = 0, 1, …) is the one add_weighted_rows does, so results match it bit for bit.
template <int W, int R>
KEEL_INLINE void add_weighted_rows_block(float* Y, int64_t y_st, const float* coef, int64_t c_st,
                                         const float* rows, int64_t stride, int64_t n_rows, int64_t len) {
  using V = VecF<W>;
  constexpr int CB = W == 16 ? 4 : 2;  // vectors per row in registers: R·CB accumulators
  int64_t p = 0;
  for (; p + CB * W <= len; p += CB * W) {
    typename V::F acc[R][CB];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CB; ++c) acc[r][c] = V::load(Y + r * y_st + p + c * W);
    for (int64_t j = 0; j < n_rows; ++j) {
      typename V::F x[CB];
      for (int c = 0; c < CB; ++c) x[c] = V::load(rows + j * stride + p + c * W);
      for (int r = 0; r < R; ++r) {
        const float cr = coef[r * c_st + j];
        for (int c = 0; c < CB; ++c) acc[r][c] += cr * x[c];
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CB; ++c) V::store(Y + r * y_st + p + c * W, acc[r][c]);
  }
  for (; p + W <= len; p += W) {
    typename V::F acc[R];
    for (int r = 0; r < R; ++r) acc[r] = V::load(Y + r * y_st + p);
    for (int64_t j = 0; j < n_rows; ++j) {
      const typename V::F x = V::load(rows + j * stride + p);
      for (int r = 0; r < R; ++r) acc[r] += coef[r * c_st + j] * x;
    }
    for (int r = 0; r < R; ++r) V::store(Y + r * y_st + p, acc[r]);
  }
  for (; p < len; ++p)
    for (int r = 0; r < R; ++r) {
      float s = Y[r * y_st + p];
      for (int64_t j = 0; j < n_rows; ++j) s += coef[r * c_st + j] * rows[j * stride + p];
      Y[r * y_st + p] = s;
    }
}

// add_weighted_rows_block over n_out output rows, four at a time.
template <int W>
KEEL_INLINE void add_weighted_rows_multi(float* Y, int64_t y_st, const float* coef, int64_t c_st,
                                         int64_t n_out, const float* rows, int64_t stride, int64_t n_rows,
                                         int64_t len) {
  int64_t r = 0;
  for (; r + 4 <= n_out; r += 4)
    add_weighted_rows_block<W, 4>(Y + r * y_st, y_st, coef + r * c_st, c_st, rows, stride, n_rows, len);
  for (; r < n_out; ++r)
    add_weighted_rows_block<W, 1>(Y + r * y_st, y_st, coef + r * c_st, c_st, rows, stride, n_rows, len);
}

// y[0, n) *= alpha
template <int W>
KEEL_INLINE void scale(float* y, float alpha, int64_t n) {
  using V = VecF<W>;
  int64_t i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::load(y + i) * alpha);
  for (; i < n; ++i) y[i] *= alpha;
}

// y[0, n) = e^{y[0, n)}; n rounded up to a multiple of W (callers pad their scratch rows to that).
template <int W>
KEEL_INLINE void exp_inplace_padded(float* y, int64_t n) {
  using V = VecF<W>;
  for (int64_t i = 0; i < n; i += W) V::store(y + i, V::exp(V::load(y + i)));
}

// Scratch rows padded to a whole number of the widest vector (16 floats), so padded loops never overrun.
constexpr int64_t pad16(int64_t n) {
  return (n + 15) / 16 * 16;
}

}  // namespace keel::cpu
