// Moving values between the backend's f32 (and stored weight dtypes) and the references' double vectors.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"

namespace keel::reference_util {

// n stored values (f32/bf16/f16) to double.
inline void widen(const char* p, DType dtype, int64_t n, double* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = stored_f32(p, dtype, i);
}

// One packed row (MLX affine): element i is bits [i·b, i·b + b) of the little-endian bit stream of the u32
// words; W[i] = scale[i/g] · q + bias[i/g], in double.
inline void dequantize_row(const char* words, const char* scales, const char* biases, DType scale_dtype,
                           int32_t bits, int32_t group, int64_t n, double* out) {
  const auto* w = reinterpret_cast<const uint32_t*>(words);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bit = i * bits, word = bit / 32, shift = bit % 32;
    uint64_t v = w[word] >> shift;
    if (shift + bits > 32) v |= static_cast<uint64_t>(w[word + 1]) << (32 - shift);
    const double q = static_cast<double>(v & ((uint64_t{1} << bits) - 1));
    out[i] = stored_f32(scales, scale_dtype, i / group) * q + stored_f32(biases, scale_dtype, i / group);
  }
}

inline std::vector<double> read_row(const float* p, int64_t n) {
  return std::vector<double>(p, p + n);
}

// rows × n floats, rows row_bytes apart.
inline std::vector<double> read_rows(const char* p, int64_t row_bytes, int64_t rows, int64_t n) {
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(r * n + i)] = reinterpret_cast<const float*>(p + r * row_bytes)[i];
  return v;
}

// [rows, heads, n] floats with strides in floats.
inline std::vector<double> read_3d(const float* p, int64_t st, int64_t sh, int64_t rows, int64_t heads,
                                   int64_t n) {
  std::vector<double> v(static_cast<size_t>(rows * heads * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>((r * heads + h) * n + i)] = p[r * st + h * sh + i];
  return v;
}

inline void write_3d(const std::vector<double>& v, float* p, int64_t st, int64_t sh, int64_t rows,
                     int64_t heads, int64_t n) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n; ++i)
        p[r * st + h * sh + i] = static_cast<float>(v[static_cast<size_t>((r * heads + h) * n + i)]);
}

inline void write_row(const std::vector<double>& v, float* out) {
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
}

}  // namespace keel::reference_util
