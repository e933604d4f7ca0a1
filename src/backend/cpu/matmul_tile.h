// The matmul kernel body, written once over a vector type V and instantiated by each matmul_<isa>.cpp inside
// its target region (`#pragma GCC target`, or clang's `#pragma clang attribute`) (so intrinsics inline).
// Include it only there, after <cstdint>/<cstring>.
//
// V provides: F (vector of L floats), L, MR × NR (the register tile: MR x rows by NR weight rows), zero(),
// load(const float*), store(float*, F), fma(a, b, acc) = a·b + acc, sum(F) (a fixed tree), and
// load_bf16 / load_f16 (L elements widened to f32), load_bf16_pairs(p, even, odd) (2L bf16 elements: the even
// ones and the odd ones widened, in order) and deinterleave(p, even, odd) (the same split of 2L floats); for
// packed weights set1(float), mul, add and
// unpack<B>(const uint8_t* p): the L B-bit values of the bit stream starting at byte p (L·B/8 bytes, read
// exactly), as floats.
#pragma once
#include <emmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul.h"
#include "core/dtype.h"

namespace keel::cpu::matmul_tile {

enum class WKind { f32, bf16, f16 };

template <WKind K>
constexpr int64_t w_elem_bytes() {
  return K == WKind::f32 ? 4 : 2;
}

template <class V, WKind K>
inline __attribute__((always_inline)) typename V::F load_w(const char* row, int64_t k) {
  if constexpr (K == WKind::f32) return V::load(reinterpret_cast<const float*>(row) + k);
  if constexpr (K == WKind::bf16) return V::load_bf16(reinterpret_cast<const uint16_t*>(row) + k);
  if constexpr (K == WKind::f16) return V::load_f16(reinterpret_cast<const uint16_t*>(row) + k);
}

// Elements [k, k + n) of a row, n < L, zero-padded to L lanes.
template <class V, WKind K>
inline __attribute__((always_inline)) typename V::F load_w_tail(const char* row, int64_t k, int64_t n) {
  alignas(64) unsigned char tmp[V::L * 4] = {};
  __builtin_memcpy(tmp, row + k * w_elem_bytes<K>(), static_cast<size_t>(n * w_elem_bytes<K>()));
  return load_w<V, K>(reinterpret_cast<const char*>(tmp), 0);
}

template <class V>
inline __attribute__((always_inline)) typename V::F load_x_tail(const float* x, int64_t n) {
  alignas(64) float tmp[V::L] = {};
  __builtin_memcpy(tmp, x, static_cast<size_t>(n * 4));
  return V::load(tmp);
}

// acc[i][j] += x[i] · w[j] over elements [k0, k1): whole L-steps, then (when k1 == in is not a multiple of L)
// one zero-padded step. k0 is a multiple of L. Splitting [0, in) at multiples of L gives the same bits as one
// call. Packed (a widened panel): w[j] points at row j's first L floats and the rows' k-steps interleave,
// NR·L floats apart, zero-padded past `in`; else w[j] is a plain row.
// Prefetch (rows read in place from memory: decode): each weight row's cache line kPrefetchBytes ahead is
// asked for once, as the loop enters the line before it; no effect on the values.
constexpr int64_t kPrefetchBytes = 512;

template <class V, WKind K, int MR, int NR, bool Packed = false, bool Prefetch = false>
inline __attribute__((always_inline)) void accumulate(typename V::F (&acc)[MR][NR], const float* const* x,
                                                      const char* const* w, int64_t k0, int64_t k1) {
  constexpr int64_t ks = Packed ? NR : 1;
  constexpr int64_t es = w_elem_bytes<K>();
  const int64_t full = k1 - k1 % V::L;
  for (int64_t k = k0; k < full; k += V::L) {
    if constexpr (Prefetch)
      if ((k * es) % 64 == 0)
        for (int j = 0; j < NR; ++j) _mm_prefetch(w[j] + k * es + kPrefetchBytes, _MM_HINT_T0);
    typename V::F wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = load_w<V, K>(w[j], k * ks);
    for (int i = 0; i < MR; ++i) {
      typename V::F xv = V::load(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
    }
  }
  if (full < k1) {
    typename V::F wv[NR];
    for (int j = 0; j < NR; ++j)
      wv[j] = Packed ? load_w<V, K>(w[j], full * ks) : load_w_tail<V, K>(w[j], full, k1 - full);
    for (int i = 0; i < MR; ++i) {
      typename V::F xv = load_x_tail<V>(x[i] + full, k1 - full);
      for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
    }
  }
}

template <class V, int MR, int NR>
inline __attribute__((always_inline)) void reduce(typename V::F (&acc)[MR][NR], float (&out)[MR][NR]) {
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = V::sum(acc[i][j]);
}

// out[i][j] = x[i] · w[j] over `in` elements, in the order matmul.h states (w rows in place, prefetched).
template <class V, WKind K, int MR, int NR>
inline __attribute__((always_inline)) void dot_tile(const float* const* x, const char* const* w, int64_t in,
                                                    float (&out)[MR][NR]) {
  typename V::F acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  accumulate<V, K, MR, NR, false, true>(acc, x, w, 0, in);
  reduce<V, MR, NR>(acc, out);
}

// ---- bf16 weights: the pair order (matmul.h)

// xp = x in the pair order: block b of 2L elements is [x[2Lb], x[2Lb + 2], … | x[2Lb + 1], x[2Lb + 3], …],
// zeros past `in` up to matmul_pair_floats(in).
template <class V>
void pair_x(const float* x, int64_t in, float* xp) {
  for (int64_t k = 0; k < matmul_pair_floats(in); k += 2 * V::L) {
    typename V::F e, o;
    if (k + 2 * V::L <= in) {
      V::deinterleave(x + k, e, o);
    } else {
      alignas(64) float tmp[2 * V::L] = {};
      if (k < in) __builtin_memcpy(tmp, x + k, static_cast<size_t>((in - k) * 4));
      V::deinterleave(tmp, e, o);
    }
    V::store(xp + k, e), V::store(xp + k + V::L, o);
  }
}

// Elements [k, k + 2L) of a bf16 row of `in` elements split even/odd, zeros past `in`.
template <class V>
inline __attribute__((always_inline)) void load_pairs(const char* row, int64_t k, int64_t in,
                                                      typename V::F& e, typename V::F& o) {
  if (k + 2 * V::L <= in) return V::load_bf16_pairs(reinterpret_cast<const uint16_t*>(row) + k, e, o);
  alignas(64) uint16_t tmp[2 * V::L] = {};
  if (k < in) __builtin_memcpy(tmp, row + k * 2, static_cast<size_t>((in - k) * 2));
  V::load_bf16_pairs(tmp, e, o);
}

// acc[i][j] += the products of block k (2L elements): xp[i]'s even half with we[j], then its odd half with
// wo[j].
template <class V, int MR, int NR>
inline __attribute__((always_inline)) void fma_pairs(typename V::F (&acc)[MR][NR], const float* const* xp,
                                                     int64_t k, const typename V::F (&we)[NR],
                                                     const typename V::F (&wo)[NR]) {
  for (int i = 0; i < MR; ++i) {
    typename V::F xe = V::load(xp[i] + k), xo = V::load(xp[i] + k + V::L);
    for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(xo, wo[j], V::fma(xe, we[j], acc[i][j]));
  }
}

// acc[i][j] += xp[i] · w[j] in the pair order over matmul_pair_floats(in) elements (w: bf16 rows in place,
// `in` elements, zero-padded past them as the panel path's blocks are, prefetched; xp: matmul_pair_floats(in)
// floats a row). Whole blocks first (no branch in the streaming loop: a per-block tail test streamed 0.94×
// slower), then the zero-padded rest.
template <class V, int MR, int NR>
inline __attribute__((always_inline)) void accumulate_pairs(typename V::F (&acc)[MR][NR],
                                                            const float* const* xp, const char* const* w,
                                                            int64_t in) {
  constexpr int64_t S = 2 * V::L;
  const int64_t full = in - in % S;
  typename V::F we[NR], wo[NR];
  for (int64_t k = 0; k < full; k += S) {
    if ((k * 2) % 64 == 0)
      for (int j = 0; j < NR; ++j) _mm_prefetch(w[j] + k * 2 + kPrefetchBytes, _MM_HINT_T0);
    for (int j = 0; j < NR; ++j)
      V::load_bf16_pairs(reinterpret_cast<const uint16_t*>(w[j]) + k, we[j], wo[j]);
    fma_pairs<V, MR, NR>(acc, xp, k, we, wo);
  }
  for (int64_t k = full; k < matmul_pair_floats(in); k += S) {
    for (int j = 0; j < NR; ++j) load_pairs<V>(w[j], k, in, we[j], wo[j]);
    fma_pairs<V, MR, NR>(acc, xp, k, we, wo);
  }
}

// Pointers to rows [first, first + count) padded to N by repeating the last row (its results are dropped).
template <int N, class P>
inline __attribute__((always_inline)) void row_ptrs(P (&p)[N], const char* base, int64_t row_bytes,
                                                    int64_t first, int64_t count) {
  for (int i = 0; i < N; ++i)
    p[i] = reinterpret_cast<P>(base + (first + (i < count ? i : count - 1)) * row_bytes);
}

template <int MR, int NR>
inline __attribute__((always_inline)) void write_tile(const MatmulArgs& a, const float (&out)[MR][NR],
                                                      int64_t t0, int64_t rows, int64_t o0, int64_t cols) {
  for (int i = 0; i < rows; ++i) {
    float* y = reinterpret_cast<float*>(a.y + (t0 + i) * a.y_row_bytes) + o0;
    for (int j = 0; j < cols; ++j) y[j] = a.bias ? out[i][j] + a.bias[o0 + j] : out[i][j];
  }
}

// Rows [t0, t0 + rows) × weight rows [o0, o0 + cols), rows ≤ MR, cols ≤ NR, read in place. Missing rows and
// columns repeat the last real one (their results are dropped), so every tile runs the same code and order.
// bf16 weights: x from xpair (pair_x's rows, matmul_pair_floats(in) apart), in the pair order.
template <class V, WKind K, int MR>
inline __attribute__((always_inline)) void tile(const MatmulArgs& a, int64_t t0, int64_t rows, int64_t o0,
                                                int64_t cols, const float* xpair) {
  constexpr int NR = V::NR;
  const float* xp[MR];
  const char* wp[NR];
  row_ptrs<NR>(wp, a.w, a.w_row_bytes, o0, cols);
  float out[MR][NR];
  if constexpr (K == WKind::bf16) {
    row_ptrs<MR>(xp, reinterpret_cast<const char*>(xpair), matmul_pair_floats(a.in) * 4, t0, rows);
    typename V::F acc[MR][NR];
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
    accumulate_pairs<V, MR, NR>(acc, xp, wp, a.in);
    reduce<V, MR, NR>(acc, out);
  } else {
    row_ptrs<MR>(xp, a.x, a.x_row_bytes, t0, rows);
    dot_tile<V, K, MR, NR>(xp, wp, a.in, out);
  }
  write_tile<MR, NR>(a, out, t0, rows, o0, cols);
}

// Decode (few rows): output columns [o_begin, o_end) for every row, weights read in place and widened in
// registers. Columns outer, rows inner: NR weight rows stay in L1 while every x row passes over them.
template <class V, WKind K>
void block(const MatmulArgs& a, int64_t o_begin, int64_t o_end, const float* xpair) {
  for (int64_t o0 = o_begin; o0 < o_end; o0 += V::NR) {
    const int64_t cols = o_end - o0 < V::NR ? o_end - o0 : V::NR;
    int64_t t0 = 0, rest = a.T;
    for (; rest >= V::MR; t0 += V::MR, rest -= V::MR) tile<V, K, V::MR>(a, t0, V::MR, o0, cols, xpair);
    for (; rest >= 2; t0 += 2, rest -= 2) tile<V, K, 2>(a, t0, 2, o0, cols, xpair);
    if (rest == 1) tile<V, K, 1>(a, t0, 1, o0, cols, xpair);
  }
}

constexpr int64_t kKBlock = 512;  // x elements per k block: MR rows × 2 KiB stay in L1

// Rows [t0, t0 + rows) (rows ≤ MR) × columns [o_begin, o_end) (at most kMatmulPanelRows), with k in blocks of
// kKBlock: the block of x rows stays in L1 while every column group passes over it. Accumulators wait in
// `saved` between k blocks (stored and reloaded exactly), so the order per output is dot_tile's.
template <class V, int MR>
void kblocked_rows(const MatmulArgs& a, const float* panel, int64_t in_pad, int64_t o_begin, int64_t o_end,
                   int64_t t0, int64_t rows, typename V::F* saved) {
  constexpr int NR = V::NR;
  const float* xp[MR];
  row_ptrs<MR>(xp, a.x, a.x_row_bytes, t0, rows);
  const int64_t groups = (o_end - o_begin + NR - 1) / NR;
  for (int64_t k0 = 0; k0 < a.in; k0 += kKBlock) {
    const int64_t k1 = a.in - k0 < kKBlock ? a.in : k0 + kKBlock;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t o0 = o_begin + g * NR, cols = o_end - o0 < NR ? o_end - o0 : NR;
      const char* wp[NR];  // group g's block of the panel: NR rows × in_pad, k-steps interleaved
      for (int j = 0; j < NR; ++j) wp[j] = reinterpret_cast<const char*>(panel + g * NR * in_pad + j * V::L);
      typename V::F acc[MR][NR];
      typename V::F* keep = saved + g * MR * NR;
      for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) acc[i][j] = k0 == 0 ? V::zero() : keep[i * NR + j];
      accumulate<V, WKind::f32, MR, NR, true>(acc, xp, wp, k0, k1);
      if (k1 == a.in) {
        float out[MR][NR];
        reduce<V, MR, NR>(acc, out);
        write_tile<MR, NR>(a, out, t0, rows, o0, cols);
      } else {
        for (int i = 0; i < MR; ++i)
          for (int j = 0; j < NR; ++j) keep[i * NR + j] = acc[i][j];
      }
    }
  }
}

template <class V>
void kblocked(const MatmulArgs& a, const float* panel, int64_t in_pad, int64_t o_begin, int64_t o_end) {
  typename V::F saved[V::MR * ((kMatmulPanelRows + V::NR - 1) / V::NR) * V::NR];
  int64_t t0 = 0, rest = a.T;
  for (; rest >= V::MR; t0 += V::MR, rest -= V::MR)
    kblocked_rows<V, V::MR>(a, panel, in_pad, o_begin, o_end, t0, V::MR, saved);
  if (V::MR > 4 && rest >= 4) {
    kblocked_rows<V, 4>(a, panel, in_pad, o_begin, o_end, t0, 4, saved);
    t0 += 4, rest -= 4;
  }
  for (; rest >= 2; t0 += 2, rest -= 2) kblocked_rows<V, 2>(a, panel, in_pad, o_begin, o_end, t0, 2, saved);
  if (rest == 1) kblocked_rows<V, 1>(a, panel, in_pad, o_begin, o_end, t0, 1, saved);
}

// Prefill: the columns go a panel of kMatmulPanelRows weight rows at a time. Each panel is copied as f32
// (widened when bf16/f16) and packed for the tile: group g of NR rows is one block of NR·in_pad floats in
// which row j's k-step s sits at s·NR·L + j·L, zeros past `in` and in rows past the panel's end. bf16 rows
// are copied in the pair order (k-step 2b: block b's even elements, 2b + 1: its odd ones) and the tile walks
// xpair: the products and the order of the in-register path, so both paths give the same bits.
template <class V, WKind K>
void cols(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel, const float* xpair) {
  if (panel == nullptr) {
    block<V, K>(a, o_begin, o_end, xpair);
    return;
  }
  static_assert(kMatmulPanelRows % V::NR == 0);
  constexpr bool pairs = K == WKind::bf16;
  const int64_t in_pad = pairs ? matmul_pair_floats(a.in) : (a.in + 15) / 16 * 16;
  const int64_t full = a.in - a.in % V::L;
  MatmulArgs b = a;  // the panel kernel's view: x in the pair order for bf16
  if constexpr (pairs) b.x = reinterpret_cast<const char*>(xpair), b.x_row_bytes = in_pad * 4, b.in = in_pad;
  for (int64_t p = o_begin; p < o_end; p += kMatmulPanelRows) {
    const int64_t p_end = o_end - p < kMatmulPanelRows ? o_end : p + kMatmulPanelRows;
    const int64_t rows = (p_end - p + V::NR - 1) / V::NR * V::NR;
    for (int64_t r = 0; r < rows; ++r) {
      float* dst = panel + (r / V::NR) * V::NR * in_pad + (r % V::NR) * V::L;
      if (p + r >= p_end) {
        for (int64_t k = 0; k < in_pad; k += V::L) V::store(dst + k * V::NR, V::zero());
        continue;
      }
      const char* row = a.w + (p + r) * a.w_row_bytes;
      if constexpr (pairs) {
        for (int64_t k = 0; k < in_pad; k += 2 * V::L) {
          typename V::F e, o;
          load_pairs<V>(row, k, a.in, e, o);
          V::store(dst + k * V::NR, e);
          V::store(dst + (k + V::L) * V::NR, o);
        }
      } else {
        for (int64_t k = 0; k < in_pad; k += V::L) {
          typename V::F v = k < full   ? load_w<V, K>(row, k)
                            : k < a.in ? load_w_tail<V, K>(row, k, a.in - k)
                                       : V::zero();
          V::store(dst + k * V::NR, v);
        }
      }
    }
    kblocked<V>(b, panel, in_pad, p, p_end);
  }
}

// ---- packed weights

// Lane j of an L-lane unpack of B-bit values: its first byte, its shift within that byte, and whether it
// reaches into the next byte (shuffle controls: 4 bytes per 32-bit lane, 0x80 = zero).
template <int B, int L>
struct UnpackTable {
  alignas(64) uint8_t ctrl[L * 4] = {};
  alignas(64) int32_t shift[L] = {};
  constexpr UnpackTable() {
    for (int j = 0; j < L; ++j) {
      const int bit = j * B, byte = bit / 8, sh = bit % 8;
      ctrl[j * 4] = static_cast<uint8_t>(byte);
      ctrl[j * 4 + 1] = sh + B > 8 ? static_cast<uint8_t>(byte + 1) : uint8_t{0x80};
      ctrl[j * 4 + 2] = ctrl[j * 4 + 3] = 0x80;
      shift[j] = sh;
    }
  }
};
template <int B, int L>
inline constexpr UnpackTable<B, L> kUnpackTable{};

// Sixteen 4-bit values without a shuffle table: the 8 bytes at p (never more are read), one value a byte in
// element order (SSE2). Element i of a row sits in bits [4i, 4i + 4) of its little-endian stream, so a byte's
// low nibble comes first. The same values as the table unpack, in fewer instructions.
inline __attribute__((always_inline)) __m128i nibbles_in_order(const uint8_t* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, 8);
  const __m128i x = _mm_cvtsi64_si128(static_cast<long long>(w)), m = _mm_set1_epi8(0x0F);
  return _mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
}

// Stored scalars [i0, i0 + n) (scales or biases of one packed row) as f32: out[i] = stored_f32(p, dtype,
// i0 + i). The dtype switch is outside the loops so the bf16 and f32 ones vectorize: a loop over
// stored_f32 itself (its switch per element) streamed 2–8-bit decode at 0.70–0.88× of this on the Xeon,
// since a tile widens NR × 2 × in/G scalars against NR × in/L steps of products. Not inlined (its f16
// widening calls out, which must stay outside the callers' vector loops), so a template on V: each ISA's file
// keeps its own copy, compiled for its own target (one shared non-template copy could be the AVX-512 file's,
// run on an AVX2 machine).
template <class V>
__attribute__((noinline)) void widen_scalars(const char* p, DType dtype, int64_t i0, int64_t n, float* out) {
  switch (dtype) {
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i0 + i]);
      return;
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i0 + i]);
      return;
    default:
      std::memcpy(out, reinterpret_cast<const float*>(p) + i0, static_cast<size_t>(n) * sizeof(float));
  }
}

// Elements [k0, k0 + n) of a row, n a multiple of L: q·s + b, L at a time.
template <class V, int B, bool Wide>
inline __attribute__((always_inline)) void dequantize_span(const uint8_t* bytes, int64_t k0, int64_t n,
                                                           typename V::F s, typename V::F b, float* out,
                                                           int64_t step) {
  for (int64_t k = k0; k < k0 + n; k += V::L)
    V::store(out + (k / V::L) * step, V::add(V::mul(V::template unpack<B, Wide>(bytes + k * B / 8), s), b));
}

template <class V, int B>
void dequantize_bits(const PackedRow& r, int64_t n, float* out, int64_t step) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(r.words);
  // L-blocks starting before `wide_end` may load 16 bytes (they stay inside the row's n·B/8 bytes).
  const int64_t wide_end = (n * B / 8 - 16) * 8 / B;
  for (int64_t k0 = 0; k0 < n; k0 += r.group_size) {
    const int64_t g = k0 / r.group_size;
    const typename V::F s = V::set1(stored_f32(r.scales, r.scale_dtype, g));
    const typename V::F b = V::set1(stored_f32(r.biases, r.scale_dtype, g));
    const int64_t k1 = k0 + r.group_size;
    // [k0, split) wide, [split, k1) exact; split a multiple of L
    const int64_t split = std::max(k0, std::min(k1, (wide_end + 1) / V::L * V::L));
    dequantize_span<V, B, true>(bytes, k0, split - k0, s, b, out, step);
    dequantize_span<V, B, false>(bytes, split, k1 - split, s, b, out, step);
  }
}

// n: a multiple of the group size (so of L).
template <class V>
void dequantize_packed(const PackedRow& r, int64_t n, float* out, int64_t step) {
  switch (r.bits) {
    case 2:
      return dequantize_bits<V, 2>(r, n, out, step);
    case 3:
      return dequantize_bits<V, 3>(r, n, out, step);
    case 4:
      return dequantize_bits<V, 4>(r, n, out, step);
    case 5:
      return dequantize_bits<V, 5>(r, n, out, step);
    case 6:
      return dequantize_bits<V, 6>(r, n, out, step);
    default:
      return dequantize_bits<V, 8>(r, n, out, step);
  }
}

// Decode with packed weights: rows [t0, t0 + rows) × weight rows [o0, o0 + cols), each L-step of the NR
// weight rows dequantized in registers and used at once — the values and the order of the panel path's
// accumulate(), so both paths give the same bits. Where V has lookup tables for B bits (V::lut_regs), each
// group's s·q + b for every q is computed once per weight row and the L-steps look their values up (one
// permute instead of widening, multiplying and adding). Each row's bytes are prefetched 2·NR rows on (the
// same place two tiles on: a packed row is short, 512 bytes at 2 bits × 2048, so prefetching along the row
// reaches little; without it the tile waited on memory: 8-bit decode streamed 12 GB/s, 31 with it on the
// Zen 5), into L2 (on the 2-vCPU Xeon, 4-bit PackedDecodeStream at 2 threads: 11.3–12.1 GB/s into L1 one tile
// on, 14.8–14.9 into L2, 15.4–15.7 into L2 two tiles on; bench/results/cpu_packed_decode_2026-12-07.txt). Not
// inlined: inside packed_block, beside the six-row instance, GCC 12 kept the one-row tile's accumulators on
// the stack (every FMA through memory).
template <class V, int B, int MR>
__attribute__((noinline)) void packed_tile(const MatmulArgs& a, int64_t t0, int64_t rows, int64_t o0,
                                           int64_t cols) {
  constexpr int NR = V::NR;
  const float* xp[MR];
  row_ptrs<MR>(xp, a.x, a.x_row_bytes, t0, rows);
  const uint8_t* wp[NR];
  const char *sp[NR], *bp[NR];
  for (int j = 0; j < NR; ++j) {
    const int64_t r = o0 + (j < cols ? j : cols - 1);
    wp[j] = reinterpret_cast<const uint8_t*>(a.w + r * a.w_row_bytes);
    sp[j] = a.w_scales + r * a.w_scale_row_bytes, bp[j] = a.w_biases + r * a.w_scale_row_bytes;
  }
  typename V::F acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  const int64_t G = a.w_group_size, wide_end = (a.in * B / 8 - 16) * 8 / B;
  constexpr int kLut = V::template lut_regs<B>;  // table registers per weight row (0: unpack)
  const int64_t ahead = 2 * NR * a.w_row_bytes;  // prefetch distance: the same place 2·NR rows on
  // The NR rows' scales and biases of kScaleGroups groups at a time, widened to f32 before the groups' loop
  // (the values stored_f32 gives): inside it each is one broadcast from memory — no dtype branch, no
  // division, no call (an f16 widening call made GCC keep the accumulators on the stack across every group).
  constexpr int64_t kScaleGroups = 64;
  float sb[NR][2][kScaleGroups];  // [row][scale, bias][group - g0]
  const int64_t n_groups = a.in / G;
  for (int64_t k0 = 0, g = 0; k0 < a.in; k0 += G, ++g) {
    const int64_t gi = g % kScaleGroups;
    if (gi == 0) {
      const int64_t n = n_groups - g < kScaleGroups ? n_groups - g : kScaleGroups;
      for (int j = 0; j < NR; ++j) {
        widen_scalars<V>(sp[j], a.w_scale_dtype, g, n, sb[j][0]);
        widen_scalars<V>(bp[j], a.w_scale_dtype, g, n, sb[j][1]);
      }
    }
    typename V::F s[NR], b[NR];
    typename V::F lut[NR][kLut > 0 ? kLut : 1];
    for (int j = 0; j < NR; ++j) {
      s[j] = V::set1(sb[j][0][gi]);
      b[j] = V::set1(sb[j][1][gi]);
      if constexpr (kLut > 0) V::template make_lut<B>(s[j], b[j], lut[j]);
    }
    for (int64_t k = k0; k < k0 + G; k += V::L) {
      const uint64_t off = static_cast<uint64_t>(k) * B / 8;  // the step's first byte in a row (unsigned: a
                                                              // shift, no sign fix-up)
      // each row's line two tiles on, into L2 (packed rows are short), at the step that enters a new line of
      // the row: L·B/8 bytes a step, so at 3, 5 and 6 bits not only at offsets ≡ 0 mod 64 (that asked for one
      // line of every three or five)
      if (off % 64 < V::L * B / 8)
        for (int j = 0; j < NR; ++j) _mm_prefetch(wp[j] + off + ahead, _MM_HINT_T1);
      typename V::F wv[NR];
      if constexpr (kLut > 0) {  // the values looked up: s·q + b of the table, as below
        if (k <= wide_end)
          for (int j = 0; j < NR; ++j) wv[j] = V::template lookup<B, true>(wp[j] + off, lut[j]);
        else
          for (int j = 0; j < NR; ++j) wv[j] = V::template lookup<B, false>(wp[j] + off, lut[j]);
      } else if (k <= wide_end) {  // 16 bytes from k·B/8 stay inside the row
        for (int j = 0; j < NR; ++j)
          wv[j] = V::add(V::mul(V::template unpack<B, true>(wp[j] + off), s[j]), b[j]);
      } else {
        for (int j = 0; j < NR; ++j)
          wv[j] = V::add(V::mul(V::template unpack<B, false>(wp[j] + off), s[j]), b[j]);
      }
      for (int i = 0; i < MR; ++i) {
        typename V::F xv = V::load(xp[i] + k);
        for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
      }
    }
  }
  float out[MR][NR];
  reduce<V, MR, NR>(acc, out);
  write_tile<MR, NR>(a, out, t0, rows, o0, cols);
}

template <class V, int B>
void packed_block(const MatmulArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o0 = o_begin; o0 < o_end; o0 += V::NR) {
    const int64_t cols = o_end - o0 < V::NR ? o_end - o0 : V::NR;
    int64_t t0 = 0, rest = a.T;
    for (; rest >= V::MR; t0 += V::MR, rest -= V::MR) packed_tile<V, B, V::MR>(a, t0, V::MR, o0, cols);
    for (; rest >= 2; t0 += 2, rest -= 2) packed_tile<V, B, 2>(a, t0, 2, o0, cols);
    if (rest == 1) packed_tile<V, B, 1>(a, t0, 1, o0, cols);
  }
}

template <class V>
void packed_decode(const MatmulArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.w_bits) {
    case 2:
      return packed_block<V, 2>(a, o_begin, o_end);
    case 3:
      return packed_block<V, 3>(a, o_begin, o_end);
    case 4:
      return packed_block<V, 4>(a, o_begin, o_end);
    case 5:
      return packed_block<V, 5>(a, o_begin, o_end);
    case 6:
      return packed_block<V, 6>(a, o_begin, o_end);
    default:
      return packed_block<V, 8>(a, o_begin, o_end);
  }
}

// Packed weights: decode (T < kMatmulPanelMinRows) in registers; prefill through panels of kMatmulPanelRows
// rows dequantized in the layout cols() packs (in is a multiple of the group size, so of 16: no padding),
// then the same panel kernel.
template <class V>
void cols_packed(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel) {
  if (panel == nullptr) return packed_decode<V>(a, o_begin, o_end);
  static_assert(kMatmulPanelRows % V::NR == 0);
  const int64_t panel_rows = kMatmulPanelRows;
  const int64_t in = a.in;
  PackedRow row;
  row.scale_dtype = a.w_scale_dtype, row.bits = a.w_bits, row.group_size = a.w_group_size;
  for (int64_t p = o_begin; p < o_end; p += panel_rows) {
    const int64_t p_end = o_end - p < panel_rows ? o_end : p + panel_rows;
    const int64_t rows = (p_end - p + V::NR - 1) / V::NR * V::NR;
    for (int64_t r = 0; r < rows; ++r) {
      float* dst = panel + (r / V::NR) * V::NR * in + (r % V::NR) * V::L;
      if (p + r >= p_end) {
        for (int64_t k = 0; k < in; k += V::L) V::store(dst + k * V::NR, V::zero());
        continue;
      }
      row.words = reinterpret_cast<const uint32_t*>(a.w + (p + r) * a.w_row_bytes);
      row.scales = a.w_scales + (p + r) * a.w_scale_row_bytes;
      row.biases = a.w_biases + (p + r) * a.w_scale_row_bytes;
      dequantize_packed<V>(row, in, dst, V::NR * V::L);
    }
    kblocked<V>(a, panel, in, p, p_end);
  }
}

template <class V>
void matmul_cols(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel, const float* xpair) {
  if (a.w_bits > 0) return cols_packed<V>(a, o_begin, o_end, panel);
  switch (a.w_dtype) {
    case DType::bf16:
      cols<V, WKind::bf16>(a, o_begin, o_end, panel, xpair);
      break;
    case DType::f16:
      cols<V, WKind::f16>(a, o_begin, o_end, panel, nullptr);
      break;
    default:
      cols<V, WKind::f32>(a, o_begin, o_end, panel, nullptr);
      break;
  }
}

}  // namespace keel::cpu::matmul_tile
