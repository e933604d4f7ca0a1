// matmul for any x86-64 (and the fallback when the CPU has no AVX2): 8 scalar lanes, no FMA (a·b then + acc).
#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_tile.h"
#include "core/dtype.h"

namespace keel::cpu {
namespace {

struct VGeneric {
  struct F {
    float v[8];
  };
  static constexpr int L = 8, MR = 2, NR = 2;
  static F zero() { return F{}; }
  static F load(const float* p) {
    F r;
    std::memcpy(r.v, p, sizeof r.v);
    return r;
  }
  static void store(float* p, const F& v) { std::memcpy(p, v.v, sizeof v.v); }
  static F fma(const F& a, const F& b, const F& acc) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = acc.v[i] + a.v[i] * b.v[i];
    return r;
  }
  static F load_bf16(const uint16_t* p) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = bf16_to_f32(p[i]);
    return r;
  }
  static F load_f16(const uint16_t* p) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = f16_to_f32(p[i]);
    return r;
  }
  static void load_bf16_pairs(const uint16_t* p, F& even, F& odd) {
    for (int i = 0; i < 8; ++i) even.v[i] = bf16_to_f32(p[2 * i]), odd.v[i] = bf16_to_f32(p[2 * i + 1]);
  }
  static void deinterleave(const float* p, F& even, F& odd) {
    for (int i = 0; i < 8; ++i) even.v[i] = p[2 * i], odd.v[i] = p[2 * i + 1];
  }
  static F set1(float x) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = x;
    return r;
  }
  static F mul(const F& a, const F& b) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] * b.v[i];
    return r;
  }
  static F add(const F& a, const F& b) {
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] + b.v[i];
    return r;
  }
  // 8 values of B bits: B bytes, one little-endian stream. 2, 4 and 8 bits: one load of B bytes. 3, 5 and 6
  // bits: 8 bytes where 16 may be read at p (Wide), else the B bytes one by one; a B-byte memcpy into the
  // word went through the stack, and the 8-byte reload waited on the narrower stores (3, 5 and 6 bits took
  // 4.6× the time of 2, 4 and 8 on the Zen 5 of 2026-12-08; PackedDecodeStream ×2.8–3.9 with this).
  template <int B>
  static constexpr int lut_regs = 0;  // no lookup tables: decode unpacks (matmul_avx512.cpp)
  template <int B, bool Wide>
  static F unpack(const uint8_t* p) {
    uint64_t bits = 0;
    if constexpr (B == 2 || B == 4 || B == 8)
      std::memcpy(&bits, p, B);
    else if constexpr (Wide)
      std::memcpy(&bits, p, 8);
    else
      for (int i = 0; i < B; ++i) bits |= static_cast<uint64_t>(p[i]) << (8 * i);
    F r;
    for (int i = 0; i < 8; ++i) r.v[i] = static_cast<float>((bits >> (i * B)) & ((1u << B) - 1u));
    return r;
  }
  static float sum(const F& a) {
    return ((a.v[0] + a.v[4]) + (a.v[2] + a.v[6])) + ((a.v[1] + a.v[5]) + (a.v[3] + a.v[7]));
  }
};

}  // namespace

void matmul_cols_generic(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                         const float* xpair) {
  matmul_tile::matmul_cols<VGeneric>(a, o_begin, o_end, panel, xpair);
}

void pair_x_generic(const float* x, int64_t in, float* xp) {
  matmul_tile::pair_x<VGeneric>(x, in, xp);
}

void dequantize_packed_generic(const PackedRow& r, int64_t n, float* out, int64_t step) {
  matmul_tile::dequantize_packed<VGeneric>(r, n, out, step);
}

}  // namespace keel::cpu
