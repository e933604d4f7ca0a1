#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace keel;

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly half-way between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // 1 + 3·2^-8: half-way, up to even
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
}

TEST(DType, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
}

TEST(DType, BytesAndNames) {
  EXPECT_EQ(dtype_bytes(DType::bf16, 10).value(), 20);
  EXPECT_EQ(dtype_bytes(DType::u32, 64).value(), 256);
  EXPECT_FALSE(dtype_bytes(DType::f32, -1));
  EXPECT_FALSE(dtype_bytes(DType::i64, int64_t{1} << 61));
  EXPECT_EQ(dtype_from_safetensors("BF16"), DType::bf16);
  EXPECT_EQ(dtype_from_safetensors("U32"), DType::u32);  // MLX's packed words
  EXPECT_EQ(dtype_name(DType::u32), "u32");
  EXPECT_FALSE(dtype_from_safetensors("F8_E4M3"));
}
