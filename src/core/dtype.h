// Element types, each with a size per element. Quantized weights are not a dtype: they are u32 words plus
// scales and biases (core/weight.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace keel {

enum class DType : uint8_t { f32, f16, bf16, i32, i64, u8, i8, u32 };

struct DTypeInfo {
  std::string_view name;  // keel's name ("f32", "bf16", "u32", ...)
  int64_t block_elems;    // 1 (every dtype is one element per block; kept for Tensor's layout arithmetic)
  int64_t block_bytes;    // bytes per element
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) {
  return dtype_info(t).name;
}
// Bytes for n elements; nullopt when n < 0 or the product overflows int64.
std::optional<int64_t> dtype_bytes(DType t, int64_t n_elems);

// The safetensors spelling ("F32", "BF16", "I64", "U32", ...) to a DType; nullopt for names keel does not
// read.
std::optional<DType> dtype_from_safetensors(std::string_view name);

// bf16 and f16 <-> f32, scalar versions (kernels have vector versions beside them).
inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Element i of a host array of stored floats at p — bf16, f16, or f32 (any other dtype is read as f32: the
// callers check the dtype first) — widened to f32 exactly. The one scalar widening of scales, biases, norm
// weights and parameter vectors; kernels widen whole tiles with their own vector code.
inline float stored_f32(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

}  // namespace keel
