// The AVX-512 lanes of the matmul kernels (16 lanes, 6×4 register tile: 24 of 32 zmm registers accumulate),
// for matmul_tile.h. Included inside a target region by matmul_avx512.cpp (Vbmi false) and
// matmul_avx512_vbmi.cpp (true: compiled with AVX512-VBMI, run only where the CPU has it).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul_tile.h"

namespace keel::cpu {
namespace {

template <bool Vbmi>
struct V512 {
  using F = __m512;
  static constexpr int L = 16, MR = 6, NR = 4;
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F fma(F a, F b, F acc) { return _mm512_fmadd_ps(a, b, acc); }
  static F load_bf16(const uint16_t* p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static F load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // 32 bf16: a bf16 is the high half of its f32, so the even elements are each lane's low half shifted up and
  // the odd ones its high half masked (no shuffle).
  static void load_bf16_pairs(const uint16_t* p, F& even, F& odd) {
    const __m512i v = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static void deinterleave(const float* p, F& even, F& odd) {
    const __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    even = _mm512_permutex2var_ps(a, ie, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ie, _mm512_set1_epi32(1)), b);
  }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  // 16 values of B bits (2B bytes) in 32-bit lanes: each lane's two bytes shuffled into place and shifted,
  // value j in lane j's bits [0, B) (the next values' bits above). Wide: 16 bytes may be read at p (else
  // exactly 2B, through a copy).
  template <int B, bool Wide>
  static __m512i shifted(const uint8_t* p) {
    __m128i bytes;
    if constexpr (Wide) {
      bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint8_t buf[16] = {};
      std::memcpy(buf, p, 2 * B);
      bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
    }
    const auto& t = matmul_tile::kUnpackTable<B, 16>;
    const __m512i v = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(bytes), _mm512_load_si512(t.ctrl));
    return _mm512_srlv_epi32(v, _mm512_load_si512(t.shift));
  }
  // 16 values of B bits as floats: shifted, masked (8 and 4 bits: widened directly).
  template <int B, bool Wide>
  static F unpack(const uint8_t* p) {
    if constexpr (B == 8)  // one byte a lane: widen the 16 bytes directly
      return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    if constexpr (B == 4)  // 8 bytes split in place, then widened (measured: decode 1.06× the table unpack
                           // on Zen 4; the same for 2 bits was 0.78×, so 2 bits keep the table)
      return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(matmul_tile::nibbles_in_order(p)));
    return _mm512_cvtepi32_ps(_mm512_and_si512(shifted<B, Wide>(p), _mm512_set1_epi32((1 << B) - 1)));
  }
  // Decode's lookup of packed values (matmul_tile::packed_tile): per group and weight row a table of the
  // dequantized values w(q) = s·q + b for every q, built by the same mul and add as unpack's users, so each
  // looked-up value is the bits dequantize_span computes. B ≤ 4: one register, w(j mod 2^B) in lane j (the
  // index's bits past B then do not matter); B = 5: two registers (q < 16, q ≥ 16). 6 and 8 bits unpack.
  template <int B>
  static constexpr int lut_regs = B <= 4   ? 1
                                  : B == 5 ? 2
                                           : 0;
  template <int B>
  static void make_lut(F s, F b, F* lut) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i q = B < 4 ? _mm512_and_si512(iota, _mm512_set1_epi32((1 << B) - 1)) : iota;
    lut[0] = add(mul(_mm512_cvtepi32_ps(q), s), b);
    if constexpr (B == 5)
      lut[1] = add(mul(_mm512_cvtepi32_ps(_mm512_add_epi32(iota, _mm512_set1_epi32(16))), s), b);
  }
  // 16 values of B bits at p, each lane's value in its low B bits (bits above: the next values'), looked up.
  // Reads exactly 2B bytes for B = 2 and 4, else as unpack. With VBMI (Vbmi: the file compiled for it), 2 to
  // 4 bits take one vpmultishiftqb from a broadcast load instead of the shifts (PackedDecodeStream, 2
  // threads, the Xeon of 2026-12-07: 3 bits ×1.07–1.19, 4 bits ×1.08–1.13, 2 bits ×1.00–1.06).
  template <int B, bool Wide>
  static F lookup(const uint8_t* p, const F* lut) {
    if constexpr (Vbmi && B <= 4) {  // the 16 fields are in one qword: vpmultishiftqb puts bits [j·B, j·B +
                                     // 8) in lane j's low byte (the table ignores the bits past B)
      __m512i d;
      if constexpr (B == 2) {  // 4 bytes, in both halves of each qword (fields 0-15 from the low half)
        uint32_t w = 0;
        std::memcpy(&w, p, 4);
        d = _mm512_set1_epi32(static_cast<int>(w));
      } else {  // 6 (3 bits) or 8 bytes (4 bits); 3 bits read 8 where Wide allows
        uint64_t w = 0;
        std::memcpy(&w, p, B == 4 || Wide ? 8 : 2 * B);
        d = _mm512_set1_epi64(static_cast<long long>(w));
      }
      const __m512i at = _mm512_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B, 8 * B, 9 * B,
                                           10 * B, 11 * B, 12 * B, 13 * B, 14 * B, 15 * B);
      return _mm512_permutexvar_ps(_mm512_multishift_epi64_epi8(at, d), lut[0]);
    }
    __m512i v;
    if constexpr (B == 2) {  // 4 bytes: lane j shifted by 2j
      uint32_t w = 0;
      std::memcpy(&w, p, 4);
      v = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w)),
                            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
    } else if constexpr (B == 4) {  // 8 bytes, each twice: byte m in lanes 2m (low nibble) and 2m + 1 (>> 4)
      const __m128i b8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      v = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b8, b8));
      v = _mm512_srlv_epi32(v, _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4));
    } else {
      v = shifted<B, Wide>(p);
    }
    if constexpr (B == 5)
      return _mm512_permutex2var_ps(lut[0], v, lut[1]);  // bits 0-3 the lane, bit 4 the table
    return _mm512_permutexvar_ps(v, lut[0]);             // bits 0-3
  }
  // ((lanes 0-7 + 8-15) → 4 + 4 → 2 + 2 → 1 + 1)
  static float sum(F v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }
};

}  // namespace
}  // namespace keel::cpu
