// ops/rope.h against ops/reference/rope_ref (double rotation, transformers' float32 angles), on every
// backend.
#include "ops/rope.h"

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/rope_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

struct Case {
  int64_t T, H, D;
  double partial, theta;
};

std::vector<int64_t> chunk_positions(int64_t offset, int64_t T) {
  std::vector<int64_t> p(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) p[static_cast<size_t>(t)] = offset + t;
  return p;
}

Tensor positions_tensor(OpBackend& ob, const std::vector<int64_t>& p) {
  std::vector<double> v(p.begin(), p.end());
  return tensor_from(ob, DType::i32, {static_cast<int64_t>(p.size())}, v, "positions");
}

}  // namespace

// f32 rotation against double with the same angles: cos/sin rounded to f32 and two rounded products and a sum
// per element, |error| ≲ 4·2^-24·(|a| + |b|): atol 5e-7·max|x|, rtol 1e-6.
TEST(Rope, MatchesReferenceAtAnyOffset) {
  KEEL_TEST_RNG(rng);
  const Case cases[] = {{1, 1, 64, 1.0, 1e4},
                        {5, 3, 80, 0.5, 1e4},
                        {33, 2, 256, 0.25, 1e7},
                        {7, 4, 128, 1.0, 1e6},
                        {2, 1, 6, 1.0, 5e5}};
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Case& c : cases) {
      const int64_t R = ops::rope_rotary_dim(c.D, c.partial);
      const int64_t offset = rng.integer(0, 70000);
      SCOPED_TRACE(fmt::format("T={} H={} D={} R={} theta={} offset={}", c.T, c.H, c.D, R, c.theta, offset));
      std::vector<int64_t> pos = chunk_positions(offset, c.T);
      Tensor x = random_tensor(*ob, rng, DType::f32, {c.T, c.H, c.D}, 2.0);
      Tensor y = nan_tensor(*ob, {c.T, c.H, c.D});
      Tensor p = positions_tensor(*ob, pos);
      ops::RopeParams params{c.theta, R};
      int64_t peak = pool_peak_during(ob->pool(), [&] { ops::rope(ob->be(), x, p, y, params); });
      std::vector<double> ref = ref::rope(values(x), pos, c.H, c.D, R, c.theta);
      EXPECT_TRUE(all_close(y, ref, 5e-7 * max_abs(values(x)), 1e-6));
      EXPECT_TRUE(workspace_ok(peak, ops::rope_workspace_bytes(c.T, R)));
      // Elements past rotary_dim are copied bit for bit.
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t i = R; i < c.D; ++i)
          ASSERT_EQ(*static_cast<float*>(y.at(t, c.H - 1, i)), *static_cast<float*>(x.at(t, c.H - 1, i)));
      // The table form and in place give the same bits.
      Tensor table = nan_tensor(*ob, {c.T, R});
      ops::rope_cos_sin(ob->be(), p, table, params);
      int64_t table_peak = pool_peak_during(ob->pool(), [&] { ops::rope(ob->be(), x, table, x); });
      EXPECT_EQ(table_peak, 0);
      EXPECT_TRUE(bitwise_equal(x, y));
    }
  }
}

// The table is cos/sin of transformers' float32 angle, rounded once (half an ulp of a value ≤ 1: 3e-8).
TEST(Rope, CosSinTableIsRoundedCosOfHfAngle) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  std::vector<int64_t> pos = {
      0, 1, 2, 17, 4095, 32768, 65535, 131071, static_cast<int64_t>(rng.integer(0, 1 << 20))};
  Tensor p = positions_tensor(ob, pos);
  const int64_t R = 64;
  Tensor table = nan_tensor(ob, {static_cast<int64_t>(pos.size()), R});
  ops::rope_cos_sin(ob.be(), p, table, {1e6, R});
  std::vector<double> ref;
  for (int64_t q : pos) {
    for (int64_t i = 0; i < R / 2; ++i) ref.push_back(std::cos(ref::hf_rope_angle(1e6, R, i, q)));
    for (int64_t i = 0; i < R / 2; ++i) ref.push_back(std::sin(ref::hf_rope_angle(1e6, R, i, q)));
  }
  EXPECT_TRUE(all_close(table, ref, 3e-8, 0));
}

// Near the start the f32 angle is the exact angle to ~1e-5 rad; far out it is not, which is why keel follows
// transformers' f32 arithmetic: a kernel using exact angles would fail MatchesReferenceAtAnyOffset.
TEST(Rope, FloatAnglesMatterFarOut) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Tensor x = random_tensor(ob, rng, DType::f32, {4, 1, 64});
  for (int64_t offset : {0, 60000}) {
    std::vector<int64_t> pos = chunk_positions(offset, 4);
    Tensor p = positions_tensor(ob, pos);
    Tensor y = nan_tensor(ob, {4, 1, 64});
    ops::rope(ob.be(), x, p, y, {1e4, 64});
    bool close = all_close(y, ref::rope(values(x), pos, 1, 64, 64, 1e4, /*hf_angles=*/false), 2e-5, 0);
    EXPECT_EQ(close, offset == 0) << "offset " << offset;
  }
}

// Each token's rotation depends only on its own position: a chunk equals the same rows of the whole.
TEST(Rope, ChunkEqualsRowsOfWhole) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor x = random_tensor(*ob, rng, DType::f32, {37, 2, 64});
    Tensor whole = nan_tensor(*ob, {37, 2, 64}), part = nan_tensor(*ob, {11, 2, 64});
    ops::rope(ob->be(), x, positions_tensor(*ob, chunk_positions(100, 37)), whole, {1e4, 32});
    ops::rope(ob->be(), x.slice(0, 20, 11), positions_tensor(*ob, chunk_positions(120, 11)), part, {1e4, 32});
    EXPECT_TRUE(bitwise_equal(part, whole.slice(0, 20, 11)));
  }
}

TEST(Rope, Errors) {
  OpBackend& ob = *op_backends().front();
  Tensor x = Tensor::empty(ob.pool(), DType::f32, {2, 1, 8}, "x");
  Tensor p = tensor_from(ob, DType::i32, {2}, {0, 1});
  EXPECT_THROW(ops::rope(ob.be(), x, p, x, {1e4, 7}), Error);   // odd
  EXPECT_THROW(ops::rope(ob.be(), x, p, x, {1e4, 10}), Error);  // > head_dim
  Tensor neg = tensor_from(ob, DType::i32, {2}, {0, -1});
  EXPECT_THROW(ops::rope(ob.be(), x, neg, x, {1e4, 8}), Error);
  Tensor p3 = tensor_from(ob, DType::i32, {3}, {0, 1, 2});
  EXPECT_THROW(ops::rope(ob.be(), x, p3, x, {1e4, 8}), Error);  // positions vs T
  EXPECT_EQ(ops::rope_rotary_dim(256, 0.25), 64);
  EXPECT_EQ(ops::rope_rotary_dim(80, 0.5), 40);
}
