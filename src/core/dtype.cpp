#include "core/dtype.h"

#include <array>
#include <limits>

namespace keel {

namespace {
// Indexed by DType.
constexpr std::array<DTypeInfo, 8> kInfo = {{
    {"f32", 1, 4},
    {"f16", 1, 2},
    {"bf16", 1, 2},
    {"i32", 1, 4},
    {"i64", 1, 8},
    {"u8", 1, 1},
    {"i8", 1, 1},
    {"u32", 1, 4},
}};
}  // namespace

const DTypeInfo& dtype_info(DType t) {
  return kInfo[static_cast<size_t>(t)];
}

std::optional<int64_t> dtype_bytes(DType t, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(t);
  if (n_elems < 0 || n_elems % info.block_elems != 0) return std::nullopt;
  int64_t blocks = n_elems / info.block_elems;
  if (blocks > std::numeric_limits<int64_t>::max() / info.block_bytes) return std::nullopt;
  return blocks * info.block_bytes;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  if (name == "I64") return DType::i64;
  if (name == "U8") return DType::u8;
  if (name == "I8") return DType::i8;
  if (name == "U32") return DType::u32;  // MLX's packed quantized words
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {  // subnormal or zero in f16: round to nearest even
    float af;
    std::memcpy(&af, &absx, 4);
    float scaled = af * 16777216.0f;  // 2^24: one f16 subnormal ulp becomes 1
    uint32_t m = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

}  // namespace keel
