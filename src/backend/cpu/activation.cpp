#include "backend/cpu/activation.h"

#include <cmath>

#include "backend/cpu/vec_f32.h"

namespace keel::cpu {

namespace {

// One vector of W elements through f.
template <int W>
KEEL_INLINE typename VecF<W>::F apply(Unary f, typename VecF<W>::F x) {
  using V = VecF<W>;
  using F = typename V::F;
  const F one = V::splat(1.0f);
  switch (f) {
    case Unary::silu:
      return x / (one + V::exp(-x));
    case Unary::sigmoid:
      return one / (one + V::exp(-x));
    case Unary::relu2: {
      F r = x > F{} ? x : F{};
      return r * r;
    }
    default:
      break;
  }
  // The rare activations (not on any hot path of the supported models): libm per element.
  float v[W];
  std::memcpy(v, &x, sizeof v);
  for (int i = 0; i < W; ++i) {
    float e = v[i];
    switch (f) {
      case Unary::gelu_erf:
        v[i] = 0.5f * e * (1.0f + std::erf(e * 0.70710678118654752f));
        break;
      case Unary::gelu_tanh:
        v[i] = 0.5f * e * (1.0f + std::tanh(0.79788456080286536f * (e + 0.044715f * e * e * e)));
        break;
      case Unary::softplus:
        v[i] = e > 20.0f ? e : std::log1p(std::exp(e));
        break;
      default:
        break;
    }
  }
  F r;
  std::memcpy(&r, v, sizeof r);
  return r;
}

// The last n % W elements go through a zero-padded vector, so they take the same path as the others.
template <int W>
KEEL_INLINE void unary_span(Unary f, const float* x, const float* u, float* y, int64_t n) {
  using V = VecF<W>;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    typename V::F r = apply<W>(f, V::load(x + i));
    V::store(y + i, u ? r * V::load(u + i) : r);
  }
  if (i < n) {
    float xb[W] = {}, ub[W] = {}, yb[W];
    std::memcpy(xb, x + i, (n - i) * 4);
    if (u) std::memcpy(ub, u + i, (n - i) * 4);
    typename V::F r = apply<W>(f, V::load(xb));
    V::store(yb, u ? r * V::load(ub) : r);
    std::memcpy(y + i, yb, (n - i) * 4);
  }
}

template <int W>
KEEL_INLINE void softmax_span(const float* x, float* y, int64_t n) {
  using V = VecF<W>;
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  const typename V::F mv = V::splat(m);
  typename V::F acc{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    typename V::F e = V::exp(V::load(x + i) - mv);
    V::store(y + i, e);
    acc += e;
  }
  if (i < n) {  // padded lanes hold −inf, whose exp is 0
    float xb[W], yb[W];
    for (int j = 0; j < W; ++j) xb[j] = i + j < n ? x[i + j] : -INFINITY;
    typename V::F e = V::exp(V::load(xb) - mv);
    V::store(yb, e);
    acc += e;
    std::memcpy(y + i, yb, (n - i) * 4);
  }
  const float s = V::hsum(acc);
  const typename V::F sum = V::splat(s);
  for (i = 0; i + W <= n; i += W) V::store(y + i, V::load(y + i) / sum);
  for (; i < n; ++i) y[i] /= s;
}

struct Kernels {
  void (*unary)(Unary, const float*, const float*, float*, int64_t);
  void (*softmax)(const float*, float*, int64_t);
};

#define KEEL_ACTIVATION_KERNELS(name, target, W)                                           \
  target void name##_unary(Unary f, const float* x, const float* u, float* y, int64_t n) { \
    unary_span<W>(f, x, u, y, n);                                                          \
  }                                                                                        \
  target void name##_softmax(const float* x, float* y, int64_t n) {                        \
    softmax_span<W>(x, y, n);                                                              \
  }                                                                                        \
  constexpr Kernels name{name##_unary, name##_softmax};

KEEL_ACTIVATION_KERNELS(k_generic, , 4)
KEEL_ACTIVATION_KERNELS(k_avx2, KEEL_TARGET_AVX2, 8)
KEEL_ACTIVATION_KERNELS(k_avx512, KEEL_TARGET_AVX512, 16)

const Kernels& kernels_for(CpuIsa isa) {
  if (isa >= CpuIsa::avx512) return k_avx512;
  if (isa == CpuIsa::avx2) return k_avx2;
  return k_generic;
}

}  // namespace

void unary(CpuIsa isa, Unary f, const float* x, float* y, int64_t n) {
  kernels_for(isa).unary(f, x, nullptr, y, n);
}

void unary_mul(CpuIsa isa, Unary f, const float* g, const float* u, float* y, int64_t n) {
  kernels_for(isa).unary(f, g, u, y, n);
}

void softmax_row(CpuIsa isa, const float* x, float* y, int64_t n) {
  kernels_for(isa).softmax(x, y, n);
}

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

}  // namespace keel::cpu

namespace keel {

namespace {

cpu::Unary unary_of(Activation f) {
  switch (f) {
    case Activation::silu:
      return cpu::Unary::silu;
    case Activation::sigmoid:
      return cpu::Unary::sigmoid;
    case Activation::relu2:
      return cpu::Unary::relu2;
    case Activation::gelu_erf:
      return cpu::Unary::gelu_erf;
    case Activation::gelu_tanh:
      return cpu::Unary::gelu_tanh;
    case Activation::softplus:
      return cpu::Unary::softplus;
  }
  return cpu::Unary::silu;
}

// fn(a_row, b_row, out_row, n) over pieces of at most kPiece elements of every row, split among the threads.
constexpr int64_t kPiece = 4096;
template <class Fn>
void for_each_piece(ThreadPool& threads, const F32Rows& a, const F32Rows* b, const F32Rows& out, Fn fn) {
  const int64_t rows = out.rows, n = out.n, pieces = (n + kPiece - 1) / kPiece;
  threads.parallel_for(rows * pieces, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / pieces, k = (i % pieces) * kPiece, len = n - k < kPiece ? n - k : kPiece;
      fn(a.row(r) + k, b ? b->row(r) + k : nullptr, out.row(r) + k, len);
    }
  });
}

}  // namespace

void CpuBackend::activation(const ActivationArgs& a) {
  const cpu::Unary u = unary_of(a.f);
  const CpuIsa isa = isa_;
  if (a.gated)
    for_each_piece(threads_, a.x, &a.up, a.out, [&](const float* g, const float* v, float* yr, int64_t n) {
      cpu::unary_mul(isa, u, g, v, yr, n);
    });
  else
    for_each_piece(threads_, a.x, nullptr, a.out, [&](const float* xr, const float*, float* yr, int64_t n) {
      cpu::unary(isa, u, xr, yr, n);
    });
}

void CpuBackend::softmax(const SoftmaxArgs& a) {
  const int64_t n = a.x.n;
  if (n == 0) return;
  threads_.parallel_for(a.x.rows, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) cpu::softmax_row(isa_, a.x.row(r), a.out.row(r), n);
  });
}

void CpuBackend::binary(const BinaryArgs& a) {
  if (a.op == BinaryOp::add)
    for_each_piece(threads_, a.a, &a.b, a.out,
                   [](const float* x, const float* y, float* o, int64_t n) { cpu::add(x, y, o, n); });
  else
    for_each_piece(threads_, a.a, &a.b, a.out,
                   [](const float* x, const float* y, float* o, int64_t n) { cpu::mul(x, y, o, n); });
}

}  // namespace keel
