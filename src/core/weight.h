// One weight type for every matrix a model multiplies by (Linear layers, MoE experts, the embedding table,
// lm_head): logical shape [rows, cols] = [out, in] in Hugging Face layout, either
//   dense:  `data` [rows, cols] f32/bf16/f16 as stored (borrowed from the mmap), or
//   packed: MLX affine quantization: `data` u32 [rows, cols·bits/32] — element i of a row sits in bits
//           [i·b, i·b + b) of the row's little-endian bit stream (words in order, bit 0 first) — and
//           `scales`, `biases` [rows, cols/group_size] (f32/bf16/f16): W[r, i] = scale[r, i/g]·q + bias[r,
//           i/g].
// Kernels for packed weights are per backend: one without them answers supports(op, u32) = false and the op
// throws Error(unsupported).
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace keel {

struct Weight {
  Tensor data;            // dense [rows, cols], or packed words u32 [rows, cols·bits/32]
  Tensor scales, biases;  // packed only: [rows, cols/group_size]
  int32_t bits = 0;       // 0: dense; packed: 2, 3, 4, 5, 6 or 8
  int32_t group_size = 0;

  Weight() = default;
  Weight(Tensor dense) : data(std::move(dense)) {}  // NOLINT: implicit, a dense tensor is a weight
  // Checks the shapes and bits (Error(invalid_argument) naming `what`).
  static Weight packed(Tensor words, Tensor scales, Tensor biases, int32_t bits, int32_t group_size,
                       std::string_view what);

  bool defined() const { return data.defined(); }
  bool is_packed() const { return bits != 0; }
  DType dtype() const { return data.dtype(); }  // u32 for packed
  int ndim() const { return data.ndim(); }
  int64_t rows() const { return data.dim(0); }
  int64_t cols() const { return is_packed() ? data.dim(1) * 32 / bits : data.dim(1); }
  // Bytes it occupies: the elements, or the packed words + scales + biases.
  int64_t nbytes() const;
  // Rows [begin, begin + n) (a fused gate_up's halves), and expert e of a 3-D stack [E, rows, ...].
  Weight slice_rows(int64_t begin, int64_t n) const;
  Weight select(int64_t e) const;
  std::string describe() const;  // "bf16 [1024, 512]" or "4-bit (group 64) [1024, 512]"
};

// What the planner needs of a weight: its dtype and, when packed, bits and group size.
struct WeightFormat {
  DType dtype = DType::f32;
  int32_t bits = 0, group_size = 0;
  WeightFormat() = default;
  WeightFormat(DType d) : dtype(d) {}  // NOLINT: implicit, a dense dtype
  WeightFormat(const Weight& w) : dtype(w.dtype()), bits(w.bits), group_size(w.group_size) {}  // NOLINT
};

}  // namespace keel
