// RoPE frequencies per rope_type against transformers' formulas (modeling_rope_utils.py) written plainly in
// double, and the table's cos/sin against double trigonometry.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "models/blocks/rope.h"

namespace keel::testing {
namespace {

std::vector<double> default_inv_freq(double theta, int64_t R) {
  std::vector<double> f;
  for (int64_t i = 0; i < R; i += 2) f.push_back(1.0 / std::pow(theta, double(i) / double(R)));
  return f;
}

TEST(RopeTable, DefaultAndLinear) {
  RopeConfig c;
  c.theta = 500000.0;
  models::RopeTable t(c, 128);
  ASSERT_EQ(t.rotary_dim(), 128);
  const std::vector<double> want = default_inv_freq(c.theta, 128);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.inv_freq()[i], want[i], 1e-6 * want[i]) << i;
  c.type = "linear";
  c.factor = 4.0;
  models::RopeTable lin(c, 128);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(lin.inv_freq()[i], want[i] / 4, 1e-6 * want[i]) << i;
}

// Llama 3.1's settings: factor 8, low 1, high 4, original context 8192, theta 5e5, head_dim 128.
TEST(RopeTable, Llama3ScalingMatchesTransformersFormula) {
  RopeConfig c;
  c.type = "llama3";
  c.theta = 500000.0;
  c.factor = 8.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.original_max_position_embeddings = 8192;
  models::RopeTable t(c, 128);
  const std::vector<double> base = default_inv_freq(c.theta, 128);
  int low = 0, high = 0, mid = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i], lo_w = 8192.0 / 1.0, hi_w = 8192.0 / 4.0;
    double want;
    if (wavelen < hi_w) {
      want = base[i], ++high;
    } else if (wavelen > lo_w) {
      want = base[i] / 8.0, ++low;
    } else {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      want = (1 - smooth) * base[i] / 8.0 + smooth * base[i], ++mid;
    }
    EXPECT_NEAR(t.inv_freq()[i], want, 2e-6 * want) << "frequency " << i;
  }
  EXPECT_GT(low, 0);
  EXPECT_GT(high, 0);
  EXPECT_GT(mid, 0);
}

TEST(RopeTable, TableHoldsCosThenSinOfEachPosition) {
  RopeConfig c;
  c.theta = 10000.0;
  c.partial_rotary_factor = 0.25;
  models::RopeTable t(c, 64);
  ASSERT_EQ(t.rotary_dim(), 16);
  MemoryPool pool("cpu", int64_t{1} << 20);
  CpuBackend be(pool, 1);
  const std::vector<int32_t> pos = {0, 1, 7, 4095};
  Tensor table = Tensor::empty(pool, DType::f32, {4, 16}, "table");
  Tensor positions = Tensor::empty(pool, DType::i32, {4}, "positions");
  be.upload(pos.data(), 16, positions);
  t.fill(be, positions, table);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i < 8; ++i) {
      const double angle = double(t.inv_freq()[static_cast<size_t>(i)]) * pos[static_cast<size_t>(r)];
      EXPECT_NEAR(table.ptr<float>()[r * 16 + i], std::cos(angle), 2e-6 * (1 + std::abs(angle)));
      EXPECT_NEAR(table.ptr<float>()[r * 16 + 8 + i], std::sin(angle), 2e-6 * (1 + std::abs(angle)));
    }
}

TEST(RopeTable, UnknownTypeIsUnsupported) {
  RopeConfig c;
  c.type = "longrope";
  try {
    models::RopeTable t(c, 64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("longrope"), std::string::npos);
  }
}

}  // namespace
}  // namespace keel::testing
