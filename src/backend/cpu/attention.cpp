#include "backend/cpu/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/vec_f32.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

// GCC 12's AVX-512 intrinsic headers self-initialize `__Y = __Y` (bug 105593), which -Wmaybe-uninitialized
// reports once they are inlined (as in matmul_avx512.cpp); clang has neither the bug nor the warning group.
#if defined(__GNUC__) && !defined(__clang__)
#define KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_PUSH \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_POP _Pragma("GCC diagnostic pop")
#else
#define KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_PUSH
#define KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_POP
#endif

namespace keel::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Rows of a work item that walk a key tile together (the scores' K loads and the P·V's V loads shared).
constexpr int kGroup = 4;
constexpr int64_t kAhead = 4;  // keys between a prefetch and its use in head_group

// Per-worker scratch: kGroup score rows, the running max and sum of hp·query_tile rows, and for an f16 cache
// the key tile's K and V widened to f32 (tile_floats = key_tile·(D + Dv), else 0).
constexpr int64_t slot_floats(int64_t key_tile, int64_t query_tile, int64_t hp, int64_t tile_floats) {
  return kGroup * key_tile + 2 * hp * query_tile + tile_floats;
}
int64_t tile_floats(const AttentionArgs& a) {
  return a.kv_dtype == DType::f16 ? a.key_tile * (a.D + a.Dv) : 0;
}

// rows × n f16 values (row r at src + r·st) widened into dst[r·n + i], exactly: F16C (vcvtph2ps) 16 or 8 at a
// time under the AVX-512 / AVX2 targets, one by one otherwise. Called once per key tile of a work item, so a
// tile's widening is shared by every row and head of the item.
// The row kAhead rows on, line by line (the cache streams from memory; as decode's scores prefetch keys).
KEEL_INLINE void prefetch_row(const uint16_t* row, int64_t n) {
  for (int64_t b = 0; b < n * 2; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(row) + b);
}
void widen_tail(const uint16_t* src, float* dst, int64_t i, int64_t n) {
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_PUSH
KEEL_TARGET_AVX512 void widen_f16_avx512(const uint16_t* src, int64_t st, int64_t rows, int64_t n,
                                         float* dst) {
  for (int64_t r = 0; r < rows; ++r, src += st, dst += n) {
    if (r + kAhead < rows) prefetch_row(src + kAhead * st, n);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(dst + i,
                       _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    widen_tail(src, dst, i, n);
  }
}
KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_POP
KEEL_TARGET_AVX2 void widen_f16_avx2(const uint16_t* src, int64_t st, int64_t rows, int64_t n, float* dst) {
  for (int64_t r = 0; r < rows; ++r, src += st, dst += n) {
    if (r + kAhead < rows) prefetch_row(src + kAhead * st, n);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    widen_tail(src, dst, i, n);
  }
}
void widen_f16_generic(const uint16_t* src, int64_t st, int64_t rows, int64_t n, float* dst) {
  for (int64_t r = 0; r < rows; ++r, src += st, dst += n) {
    if (r + kAhead < rows) prefetch_row(src + kAhead * st, n);
    widen_tail(src, dst, 0, n);
  }
}
template <int W>
void widen_f16(const uint16_t* src, int64_t st, int64_t rows, int64_t n, float* dst) {
  if constexpr (W == 16)
    widen_f16_avx512(src, st, rows, n, dst);
  else if constexpr (W == 8)
    widen_f16_avx2(src, st, rows, n, dst);
  else
    widen_f16_generic(src, st, rows, n, dst);
}

// Sums of N W-wide vectors v[i] → out[i], each by VecF<W>::hsum's pairwise tree (lanes i, i + W/2, then
// i, i + W/4, …) and so to its bits; for W = 16 the trees run side by side, two vectors' halves packed into
// one vector at every level (4 levels of shuffles and adds for up to 16 sums, against 16 trees one by one).
template <int W, int N>
KEEL_INLINE void hsums(const typename VecF<W>::F* v, float* out) {
  using F = typename VecF<W>::F;
  if constexpr (W != 16) {
    for (int i = 0; i < N; ++i) out[i] = VecF<W>::hsum(v[i]);
  } else {
    static_assert(N <= 16);
    constexpr int N1 = (N + 1) / 2, N2 = (N1 + 1) / 2, N3 = (N2 + 1) / 2;
    const auto at = [](const F* x, int n, int i) { return i < n ? x[i] : F{}; };
    F l1[N1], l2[N2], l3[N3];
    for (int p = 0; p < N1; ++p) {  // lanes 8h + i: vector 2p + h's v[i] + v[i + 8]
      const F a = at(v, N, 2 * p), b = at(v, N, 2 * p + 1);
      l1[p] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
              __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    }
    for (int p = 0; p < N2; ++p) {  // lanes 4m + i: vector 4p + m's t[i] + t[i + 4]
      const F a = at(l1, N1, 2 * p), b = at(l1, N1, 2 * p + 1);
      l2[p] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
              __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    }
    for (int p = 0; p < N3; ++p) {  // lanes 2g + i: vector 8p + g's u[i] + u[i + 2]
      const F a = at(l2, N2, 2 * p), b = at(l2, N2, 2 * p + 1);
      l3[p] = __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
              __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
    }
    const F a = l3[0], b = N3 > 1 ? l3[N3 - 1] : F{};  // lane m: vector m's w[0] + w[1]
    const F l4 = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
                 __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    float lanes[16];
    std::memcpy(lanes, &l4, sizeof lanes);
    for (int i = 0; i < N; ++i) out[i] = lanes[i];
  }
}

// The scores of G query rows q[g] against the n keys [k0, k0 + n) of K (rows k_st floats apart), written to
// s[g·s_st + j] = scale · (q[g] · k_j). Each dot product's arithmetic: one W-wide accumulator over d in
// order (FMA where the ISA has it), VecF::hsum's tree, then the d tail in order — whatever G and whichever
// keys share its block of kKeys, so a row's scores do not depend on its neighbours (batch invariance). The
// G × kKeys accumulators share each K and q load (2 FMAs a load at G = 4); the dot product per key with
// its own tree, one row's q loads per key, ran at ~40 % of the f32 FMA peak. Prefetch: the keys kAhead
// rows on, line by line (decode, where the cache streams from memory).
constexpr int kKeys = 4;
template <int W, int G, bool Prefetch>
KEEL_INLINE void scores(const float* const (&q)[G], const float* K, int64_t k_st, int64_t D, int64_t k0,
                        int64_t n, float scale, float* s, int64_t s_st) {
  using V = VecF<W>;
  for (int64_t j0 = 0; j0 < n; j0 += kKeys) {
    const float* kp[kKeys];
    for (int c = 0; c < kKeys; ++c) kp[c] = K + (k0 + std::min<int64_t>(j0 + c, n - 1)) * k_st;
    if constexpr (Prefetch) {
      for (int64_t j = j0 + kAhead; j < std::min(j0 + kAhead + kKeys, n); ++j)
        for (int64_t b = 0; b < D * 4; b += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(K + (k0 + j) * k_st) + b);
    }
    typename V::F acc[G * kKeys] = {};
    int64_t d = 0;
    for (; d + W <= D; d += W) {
      typename V::F kv[kKeys];
      for (int c = 0; c < kKeys; ++c) kv[c] = V::load(kp[c] + d);
      for (int g = 0; g < G; ++g) {
        const typename V::F qv = V::load(q[g] + d);
        for (int c = 0; c < kKeys; ++c) acc[g * kKeys + c] += qv * kv[c];
      }
    }
    float sum[G * kKeys];
    hsums<W, G * kKeys>(acc, sum);
    for (int g = 0; g < G; ++g)
      for (int c = 0; c < kKeys && j0 + c < n; ++c) {
        float t = sum[g * kKeys + c];
        for (int64_t e = d; e < D; ++e) t += q[g][e] * kp[c][e];
        s[g * s_st + j0 + c] = t * scale;
      }
  }
}

// The online-softmax update of one row over its n scores s (already scaled): new running max, exp in place,
// running sum; the row's output is rescaled by e^{m_old − m_new} before the caller adds this tile's P·V.
template <int W>
KEEL_INLINE void softmax_update(float* s, int64_t n, float& mr, float& lr, float* o, int64_t Dv) {
  float tile_max = kNegInf;
  for (int64_t j = 0; j < n; ++j) tile_max = std::max(tile_max, s[j]);
  const float m_new = std::max(mr, tile_max);
  const float alpha = std::exp(mr - m_new);  // 0 on the first tile (mr = −inf)
  for (int64_t j = 0; j < n; ++j) s[j] -= m_new;
  exp_inplace_padded<W>(s, n);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += s[j];
  lr = lr * alpha + sum;
  mr = m_new;
  if (alpha != 1.0f) scale<W>(o, alpha, Dv);
}

// G query rows walk the key tile [k0, k0 + n) together: their scores over shared K loads, the
// online-softmax update per row, P·V by one add_weighted_rows_block over shared V loads; each row's
// arithmetic is that of one row alone (G = 1). Row g reads q0 + g·q_step, accumulates into o0 + g·o_step and
// keeps its running max and sum at mr[g·ml_step], lr[g·ml_step]: the rows of one head (steps q_st, o_st, 1)
// or the heads of one row (q_sh, o_sh, query_tile). Prefetch: decode's keys ahead (scores).
template <int W, int G, bool Prefetch>
KEEL_INLINE void walk_tile(const AttentionArgs& a, const float* K, const float* V, const float* q0,
                           int64_t q_step, float* o0, int64_t o_step, int64_t k0, int64_t n, float* s,
                           float* mr, float* lr, int64_t ml_step) {
  const float* q[G];
  for (int g = 0; g < G; ++g) q[g] = q0 + g * q_step;
  scores<W, G, Prefetch>(q, K, a.k_st, a.D, k0, n, a.scale, s, a.key_tile);
  for (int g = 0; g < G; ++g)
    softmax_update<W>(s + g * a.key_tile, n, mr[g * ml_step], lr[g * ml_step], o0 + g * o_step, a.Dv);
  if constexpr (G == 1)
    add_weighted_rows<W>(o0, V + k0 * a.v_st, a.v_st, s, n, a.Dv);
  else
    add_weighted_rows_block<W, G>(o0, o_step, s, a.key_tile, V + k0 * a.v_st, a.v_st, n, a.Dv);
}

// One work item: the `hp` query heads [h0, h0 + hp) of one KV group, query positions [i0, i1) — each key and
// value tile is read once for all of them. `s` holds kGroup rows' scores for one key tile (key_tile floats
// each, a multiple of 16); m and l are the rows' running max and sum, [hp, query_tile]. The output rows
// accumulate. Rows whose tile is whole (the row is at or past the tile's last key) go kGroup at a time; the
// others (the diagonal's tile, the item's last rows) one by one; an item of fewer than kGroup rows (decode)
// groups its heads instead (walk_tile either way). Every row's arithmetic is the same either way (scores'
// per dot product, add_weighted_rows_block is add_weighted_rows, bit for bit), so a row's bits do not depend
// on which rows share its call: the op stays batch invariant.
// T: the cache's elements (float, or f16 bits); an f16 cache's key tile is widened into `tile` (key_tile
// rows of K, then of V) once, and the rows walk that.
template <int W, class T>
KEEL_INLINE void attention_item(const AttentionArgs& a, int64_t hp, int64_t item, float* s, float* m,
                                float* l, float* tile) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  const int64_t n_sub = a.n_q / hp;  // head subgroups across all KV groups
  const int64_t h0 = item % n_sub * hp, i0 = item / n_sub * a.query_tile;
  const int64_t i1 = std::min(a.T, i0 + a.query_tile);
  const int64_t hk = h0 / (a.n_q / a.n_kv);
  const T* K = static_cast<const T*>(a.k) + hk * a.k_sh;
  const T* V = static_cast<const T*>(a.v) + hk * a.v_sh;
  for (int64_t hh = 0; hh < hp; ++hh)
    for (int64_t r = i0; r < i1; ++r) {
      m[hh * a.query_tile + r - i0] = kNegInf;
      l[hh * a.query_tile + r - i0] = 0;
      std::fill_n(a.out + r * a.o_st + (h0 + hh) * a.o_sh, a.Dv, 0.0f);
    }
  AttentionArgs at = a;  // the rows' view of the tile: the cache as stored (f32), or the widened tile
  if constexpr (!kF32) at.k_st = a.D, at.v_st = a.Dv;
  const int64_t keys_end = a.offset + i1;  // the last row sees keys [0, keys_end)
  for (int64_t k0 = 0; k0 < keys_end; k0 += a.key_tile) {
    const int64_t k1 = std::min(k0 + a.key_tile, keys_end);
    const float *Kt, *Vt;  // key j of the tile at Kt + (kt + j)·at.k_st
    int64_t kt = k0;
    if constexpr (kF32) {
      Kt = K, Vt = V;
    } else {
      widen_f16<W>(K + k0 * a.k_st, a.k_st, k1 - k0, a.D, tile);
      widen_f16<W>(V + k0 * a.v_st, a.v_st, k1 - k0, a.Dv, tile + a.key_tile * a.D);
      Kt = tile, Vt = tile + a.key_tile * a.D, kt = 0;
    }
    if (i1 - i0 < kGroup) {  // too few rows to group (decode): the item's heads go kGroup, then 2, at a time
      const int64_t st = a.query_tile;  // between heads in m and l
      for (int64_t r = i0; r < i1; ++r) {
        const int64_t pos = a.offset + r;
        if (pos < k0) continue;
        const int64_t n = std::min(k1, pos + 1) - k0;
        auto heads = [&](auto G, int64_t hh) {  // G: std::integral_constant, the heads walked together
          walk_tile<W, decltype(G)::value, kF32>(at, Kt, Vt, a.q + r * a.q_st + (h0 + hh) * a.q_sh, a.q_sh,
                                                 a.out + r * a.o_st + (h0 + hh) * a.o_sh, a.o_sh, kt, n, s,
                                                 m + hh * st + r - i0, l + hh * st + r - i0, st);
        };
        int64_t hh = 0;
        for (; hh + kGroup <= hp; hh += kGroup) heads(std::integral_constant<int, kGroup>{}, hh);
        for (; hh + 2 <= hp; hh += 2) heads(std::integral_constant<int, 2>{}, hh);
        for (; hh < hp; ++hh) heads(std::integral_constant<int, 1>{}, hh);
      }
      continue;
    }
    for (int64_t hh = 0; hh < hp; ++hh) {
      const int64_t h = h0 + hh;
      float* mh = m + hh * a.query_tile - i0;  // indexed by r
      float* lh = l + hh * a.query_tile - i0;
      for (int64_t r = i0; r < i1;) {
        const int64_t pos = a.offset + r;
        if (pos < k0) {  // this tile is above the row's diagonal
          ++r;
          continue;
        }
        const float* q = a.q + r * a.q_st + h * a.q_sh;
        float* o = a.out + r * a.o_st + h * a.o_sh;
        if (r + kGroup <= i1 && pos + 1 >= k1) {  // kGroup rows, each seeing the whole tile [k0, k1)
          walk_tile<W, kGroup, false>(at, Kt, Vt, q, a.q_st, o, a.o_st, kt, k1 - k0, s, mh + r, lh + r, 1);
          r += kGroup;
        } else {
          walk_tile<W, 1, false>(at, Kt, Vt, q, a.q_st, o, a.o_st, kt, std::min(k1, pos + 1) - k0, s, mh + r,
                                 lh + r, 1);
          ++r;
        }
      }
    }
  }
  for (int64_t hh = 0; hh < hp; ++hh)
    for (int64_t r = i0; r < i1; ++r)
      scale<W>(a.out + r * a.o_st + (h0 + hh) * a.o_sh, 1.0f / l[hh * a.query_tile + r - i0], a.Dv);
}

// Worker slot `slot` of `slots` takes items slot, slot + slots, … (each `hp` query heads): rows near the
// diagonal's end (long) and near its start (short) mix in every slot.
template <int W, class T>
KEEL_INLINE void attention_slot(const AttentionArgs& a, int64_t hp, int64_t slot, int64_t slots,
                                int64_t n_items, float* ws) {
  float* s = ws + slot * slot_floats(a.key_tile, a.query_tile, hp, tile_floats(a));
  float* m = s + kGroup * a.key_tile;
  float* l = m + hp * a.query_tile;
  float* tile = l + hp * a.query_tile;
  for (int64_t item = slot; item < n_items; item += slots) attention_item<W, T>(a, hp, item, s, m, l, tile);
}

using SlotFn = void (*)(const AttentionArgs&, int64_t, int64_t, int64_t, int64_t, float*);

// One entry point per ISA and cache element type (f32, or f16 bits).
#define KEEL_ATTENTION_KERNEL(name, target, W, T)                                                           \
  target void name(const AttentionArgs& a, int64_t hp, int64_t slot, int64_t slots, int64_t n, float* ws) { \
    attention_slot<W, T>(a, hp, slot, slots, n, ws);                                                        \
  }

KEEL_ATTENTION_KERNEL(slot_generic, , 4, float)
KEEL_ATTENTION_KERNEL(slot_avx2, KEEL_TARGET_AVX2, 8, float)
KEEL_ATTENTION_KERNEL(slot_avx512, KEEL_TARGET_AVX512, 16, float)
KEEL_ATTENTION_KERNEL(slot_generic_f16, , 4, uint16_t)
KEEL_ATTENTION_KERNEL(slot_avx2_f16, KEEL_TARGET_AVX2, 8, uint16_t)
KEEL_ATTENTION_KERNEL(slot_avx512_f16, KEEL_TARGET_AVX512, 16, uint16_t)

SlotFn slot_kernel(CpuIsa isa, DType kv) {
  const bool f16 = kv == DType::f16;
  if (isa >= CpuIsa::avx512) return f16 ? slot_avx512_f16 : slot_avx512;
  if (isa == CpuIsa::avx2) return f16 ? slot_avx2_f16 : slot_avx2;
  return f16 ? slot_generic_f16 : slot_generic;
}

// f32 → f16 (IEEE, round to nearest even): F16C's vcvtps2ph 16 or 8 at a time under the AVX-512 / AVX2
// targets, core's f32_to_f16 (the same rounding) for the tail and the baseline.
void to_f16_tail(const float* src, uint16_t* dst, int64_t i, int64_t n) {
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_PUSH
KEEL_TARGET_AVX512 void to_f16_avx512(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  to_f16_tail(src, dst, i, n);
}
KEEL_GCC_IGNORE_INTRINSIC_SELF_INIT_POP
KEEL_TARGET_AVX2 void to_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  to_f16_tail(src, dst, i, n);
}
void to_f16_generic(const float* src, uint16_t* dst, int64_t n) {
  to_f16_tail(src, dst, 0, n);
}

int64_t items_for(int64_t T, int64_t n_q, int64_t query_tile, int64_t heads_per_item) {
  return n_q / heads_per_item * ((T + query_tile - 1) / query_tile);
}

}  // namespace

int64_t attention_heads_per_item(int64_t T, int64_t n_q, int64_t n_kv, int64_t query_tile, int n_threads) {
  const int64_t rep = n_q / n_kv, tiles = (T + query_tile - 1) / query_tile;
  const int64_t want_splits = (std::max(n_threads, 1) + n_kv * tiles - 1) / (n_kv * tiles);
  int64_t split = 1;  // the smallest divisor of rep giving the workers enough items
  while (split < rep && (split < want_splits || rep % split != 0)) ++split;
  return rep / split;
}

int64_t attention_kernel_workspace_bytes(int64_t T, int64_t n_q, int64_t n_kv, int64_t key_tile,
                                         int64_t query_tile, int n_threads, int64_t kv_tile_floats) {
  if (T == 0) return 0;
  const int64_t hp = attention_heads_per_item(T, n_q, n_kv, query_tile, n_threads);
  const int64_t slots = std::min<int64_t>(std::max(n_threads, 1), items_for(T, n_q, query_tile, hp));
  return 4 * slots * slot_floats(key_tile, query_tile, hp, kv_tile_floats);
}

void attention(CpuBackend& be, const AttentionArgs& a) {
  if (a.T == 0) return;
  ThreadPool& pool = *be.threads();
  const int64_t hp = attention_heads_per_item(a.T, a.n_q, a.n_kv, a.query_tile, pool.size());
  const int64_t n_items = items_for(a.T, a.n_q, a.query_tile, hp);
  const int64_t slots = std::min<int64_t>(pool.size(), n_items);
  Tensor ws = Tensor::empty(be.pool(), DType::f32,
                            {slots * slot_floats(a.key_tile, a.query_tile, hp, tile_floats(a))},
                            "attention workspace");
  std::fill_n(ws.ptr<float>(), ws.numel(), 0.0f);  // score rows are read whole by the padded exp
  const SlotFn fn = slot_kernel(be.isa(), a.kv_dtype);
  float* w = ws.ptr<float>();
  pool.parallel_for(slots, [&](int64_t b, int64_t e, int) {
    for (int64_t slot = b; slot < e; ++slot) fn(a, hp, slot, slots, n_items, w);
  });
}

}  // namespace keel::cpu

namespace keel {

void CpuBackend::convert(const ConvertArgs& a) {
  if (a.n == 0) return;
  if (a.dst_dtype == DType::f32) {
    std::memcpy(a.dst, a.src, static_cast<size_t>(a.n) * 4);
    return;
  }
  if (a.dst_dtype != DType::f16)
    throw_error(ErrorCode::unsupported, "convert: to {} on the CPU (f32 and f16 only)",
                dtype_name(a.dst_dtype));
  auto* dst = static_cast<uint16_t*>(a.dst);
  // Chunks of 64 Ki elements over the workers (a prefill chunk's rows: T · n_kv · D).
  constexpr int64_t kChunk = 64 * 1024;
  auto* fn = isa() >= CpuIsa::avx512 ? cpu::to_f16_avx512
             : isa() == CpuIsa::avx2 ? cpu::to_f16_avx2
                                     : cpu::to_f16_generic;
  threads()->parallel_for((a.n + kChunk - 1) / kChunk, [&](int64_t b, int64_t e, int) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t i0 = c * kChunk, n = std::min(kChunk, a.n - i0);
      fn(a.src + i0, dst + i0, n);
    }
  });
}

int64_t CpuBackend::attention_workspace(const AttentionArgs& a) const {
  return cpu::attention_kernel_workspace_bytes(a.T, a.n_q, a.n_kv, a.key_tile, a.query_tile, workers(),
                                               cpu::tile_floats(a));
}

void CpuBackend::attention(const AttentionArgs& a) {
  cpu::attention(*this, a);
}

}  // namespace keel
