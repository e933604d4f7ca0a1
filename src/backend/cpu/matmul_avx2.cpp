// matmul with AVX2 + FMA (8 lanes, 2×4 register tile: 8 accumulators of 16 ymm registers).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul.h"

// GCC 12's intrinsic headers self-initialize `__Y = __Y` (GCC bug 105593), which -Wuninitialized reports once
// the intrinsics are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// clang ignores `#pragma GCC target`; its own form gives every function of the region the same target.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "backend/cpu/matmul_tile.h"

namespace keel::cpu {
namespace {

struct V256 {
  using F = __m256;
  static constexpr int L = 8, MR = 2, NR = 4;
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F fma(F a, F b, F acc) { return _mm256_fmadd_ps(a, b, acc); }
  static F load_bf16(const uint16_t* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static F load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // 16 bf16: even = each lane's low half shifted up, odd = its high half masked (matmul_avx512.cpp).
  static void load_bf16_pairs(const uint16_t* p, F& even, F& odd) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  // a = p[0..8), b = p[8..16): shuffle_ps picks [a0 a2 b0 b2 | a4 a6 b4 b6], the 64-bit permute orders it.
  static void deinterleave(const float* p, F& even, F& odd) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))), _MM_SHUFFLE(3, 1, 2, 0)));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  // Decode's lookup of packed values (matmul_tile::packed_tile; matmul_avx512.cpp says how): B ≤ 3, one
  // register, w(j mod 2^B) in lane j, and vpermps reads an index's bits 0-2 only. 4 bits and more unpack: 16
  // entries take two permutes and a blend, no fewer instructions than the unpack.
  template <int B>
  static constexpr int lut_regs = B <= 3 ? 1 : 0;
  template <int B>
  static void make_lut(F s, F b, F* lut) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i q = B < 3 ? _mm256_and_si256(iota, _mm256_set1_epi32((1 << B) - 1)) : iota;
    lut[0] = add(mul(_mm256_cvtepi32_ps(q), s), b);
  }
  // 8 values of B bits at p (B bytes; Wide: 4 bytes may be read), lane j shifted by B·j, looked up.
  template <int B, bool Wide>
  static F lookup(const uint8_t* p, const F* lut) {
    __m256i w;
    if constexpr (Wide) {
      w = _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
    } else {
      uint32_t u = 0;
      std::memcpy(&u, p, B);
      w = _mm256_set1_epi32(static_cast<int>(u));
    }
    const __m256i shift =
        B == 2 ? _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14) : _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
    return _mm256_permutevar8x32_ps(lut[0], _mm256_srlv_epi32(w, shift));
  }
  // 8 values of B bits (B bytes): each lane's two bytes shuffled into place, shifted, masked.
  // Wide: 16 bytes may be read at p (else exactly B, through a copy).
  template <int B, bool Wide>
  static F unpack(const uint8_t* p) {
    if constexpr (B == 8)  // one byte a lane: widen the 8 bytes directly
      return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    __m128i bytes;
    if constexpr (Wide) {
      bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint8_t buf[16] = {};
      std::memcpy(buf, p, B);
      bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
    }
    const auto& t = matmul_tile::kUnpackTable<B, 8>;
    __m256i v = _mm256_broadcastsi128_si256(bytes);
    v = _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.ctrl)));
    v = _mm256_srlv_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.shift)));
    v = _mm256_and_si256(v, _mm256_set1_epi32((1 << B) - 1));
    return _mm256_cvtepi32_ps(v);
  }
  // (lanes 0-3 + 4-7 → 2 + 2 → 1 + 1)
  static float sum(F v) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }
};

}  // namespace

void matmul_cols_avx2(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel, const float* xpair) {
  matmul_tile::matmul_cols<V256>(a, o_begin, o_end, panel, xpair);
}

void pair_x_avx2(const float* x, int64_t in, float* xp) {
  matmul_tile::pair_x<V256>(x, in, xp);
}

void dequantize_packed_avx2(const PackedRow& r, int64_t n, float* out, int64_t step) {
  matmul_tile::dequantize_packed<V256>(r, n, out, step);
}

}  // namespace keel::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
