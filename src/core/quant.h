// MLX's affine quantization: the layout its files store and the scale/bias choice its CPU backend makes.
//
// A weight row of K elements is cut into groups of `group_size` (32, 64 or 128); group g has a scale s_g and
// a bias b_g, stored in the weight's float dtype (bf16, f16 or f32), and each element an unsigned `bits`-bit
// integer q (bits 2, 3, 4, 5, 6 or 8), so that w ≈ s_g·q + b_g. Element i of a row sits in bits
// [i·bits, i·bits + bits) of the row's little-endian bit stream, stored as K·bits/32 u32 words (K is a
// multiple of the group size, so of 32): 3-, 5- and 6-bit values straddle words. This is the layout MLX's
// kernels read (ml-explore/mlx mlx/backend/cpu/quantized.cpp `extract_bits` / `_qmm_t`: bytes of 8 values for
// 3 and 5 bits, of 4 values for 6 bits, whole words for powers of two — one bit stream in every case).
//
// quantize_group() is MLX's CPU `quantize` (same file, `template <typename T, typename U> void quantize`):
// the edge of larger magnitude becomes the bias, the scale may be negative, 0.0 lands exactly on the grid
// when the edge's grid index is not 0, and q is computed with the fp32 scale and bias before they are rounded
// to the storage dtype. MLX's Metal and CUDA quantizers differ slightly (their group max starts at 0, they
// round half away from zero); keel matches the CPU one, and loads files from all three alike (dequantization
// is the same).
#pragma once
#include <cstdint>

namespace keel::quant {

inline bool valid_bits(int bits) {
  return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
}
inline bool valid_group_size(int group_size) {
  return group_size == 32 || group_size == 64 || group_size == 128;
}
// u32 words of a packed row of k elements (k a multiple of 32).
inline int64_t packed_words(int64_t k, int bits) {
  return k * bits / 32;
}

// q of element i of a packed row.
inline uint32_t get_q(const uint32_t* words, int64_t i, int bits) {
  const int64_t bit = i * bits;
  const int64_t w = bit >> 5;
  const int shift = static_cast<int>(bit & 31);
  uint64_t v = words[w] >> shift;
  if (shift + bits > 32) v |= static_cast<uint64_t>(words[w + 1]) << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1u);
}

// q[k] (each < 2^bits) -> words[packed_words(k, bits)]; k a multiple of 32.
void pack_row(const uint8_t* q, int64_t k, int bits, uint32_t* words);
// words -> q[k].
void unpack_row(const uint32_t* words, int64_t k, int bits, uint8_t* q);

// One group of MLX's CPU quantizer: w[group_size] (f32 values of the source weights) -> q[group_size] and the
// fp32 scale and bias (the caller rounds them to the storage dtype; q does not depend on that rounding).
void quantize_group(const float* w, int group_size, int bits, uint8_t* q, float* scale, float* bias);

// A row of k: words[packed_words(k, bits)], scales and biases [k / group_size] in fp32.
void quantize_row(const float* w, int64_t k, int group_size, int bits, uint32_t* words, float* scales,
                  float* biases);
// out[k] = s_g·q + b_g in fp32, a product then a sum (for bf16/f16 scales the product is exact: at most 11
// significant bits times q's 8).
void dequantize_row(const uint32_t* words, const float* scales, const float* biases, int64_t k,
                    int group_size, int bits, float* out);

}  // namespace keel::quant
