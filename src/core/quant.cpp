#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace keel::quant {

void pack_row(const uint8_t* q, int64_t k, int bits, uint32_t* words) {
  const int64_t n = packed_words(k, bits);
  std::fill(words, words + n, 0u);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t bit = i * bits;
    const int shift = static_cast<int>(bit & 31);
    const uint64_t v = static_cast<uint64_t>(q[i]) << shift;
    words[bit >> 5] |= static_cast<uint32_t>(v);
    if (shift + bits > 32) words[(bit >> 5) + 1] |= static_cast<uint32_t>(v >> 32);
  }
}

void unpack_row(const uint32_t* words, int64_t k, int bits, uint8_t* q) {
  for (int64_t i = 0; i < k; ++i) q[i] = static_cast<uint8_t>(get_q(words, i, bits));
}

// MLX mlx/backend/cpu/quantized.cpp, `quantize<T, U>`: the same fp32 operations in the same order. std::rint
// rounds half to even in the default rounding mode, as MLX's does.
void quantize_group(const float* w, int group_size, int bits, uint8_t* q, float* scale_out, float* bias_out) {
  const float n_bins = static_cast<float>((1 << bits) - 1);
  const float eps = 1e-7f;
  float w_min = std::numeric_limits<float>::infinity();
  float w_max = -w_min;
  for (int j = 0; j < group_size; ++j) {
    w_max = std::max(w_max, w[j]);
    w_min = std::min(w_min, w[j]);
  }
  const bool mask = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, eps);
  scale = mask ? scale : -scale;
  const float edge = mask ? w_min : w_max;
  const float q0 = std::rint(edge / scale);
  float bias = 0;
  if (q0 != 0) {
    scale = edge / q0;
    bias = edge;
  }
  for (int j = 0; j < group_size; ++j) {
    float v = std::rint((w[j] - bias) / scale);
    v = std::min(std::max(v, 0.0f), n_bins);
    q[j] = static_cast<uint8_t>(v);
  }
  *scale_out = scale;
  *bias_out = bias;
}

void quantize_row(const float* w, int64_t k, int group_size, int bits, uint32_t* words, float* scales,
                  float* biases) {
  uint8_t q[128];
  std::fill(words, words + packed_words(k, bits), 0u);
  for (int64_t g = 0; g < k / group_size; ++g) {
    quantize_group(w + g * group_size, group_size, bits, q, &scales[g], &biases[g]);
    for (int j = 0; j < group_size; ++j) {
      const int64_t bit = (g * group_size + j) * bits;
      const int shift = static_cast<int>(bit & 31);
      const uint64_t v = static_cast<uint64_t>(q[j]) << shift;
      words[bit >> 5] |= static_cast<uint32_t>(v);
      if (shift + bits > 32) words[(bit >> 5) + 1] |= static_cast<uint32_t>(v >> 32);
    }
  }
}

void dequantize_row(const uint32_t* words, const float* scales, const float* biases, int64_t k,
                    int group_size, int bits, float* out) {
  for (int64_t i = 0; i < k; ++i) {
    const int64_t g = i / group_size;
    const float prod = scales[g] * static_cast<float>(get_q(words, i, bits));
    out[i] = prod + biases[g];
  }
}

}  // namespace keel::quant
