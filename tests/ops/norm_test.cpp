// ops/norm.h against ops/reference/norm_ref (double, written as transformers' modules), on every backend.
#include "ops/norm.h"

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/norm_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// f32 results against double: r = 1/sqrt(var + eps) and two products each rounded once, the vector silu
// (~2 ulp) for the gated forms: rtol 4e-6 (~30 ulp). Outputs are products, so no atol is needed beyond exact
// zeros.
constexpr double kRtol = 4e-6, kAtol = 1e-30;

// Rows of mixed scale: uniform ±2, with one row ×1e4 and one row ×1e-4 when there are enough rows.
Tensor norm_input(OpBackend& ob, TestRng& rng, std::initializer_list<int64_t> shape) {
  Tensor x = random_tensor(ob, rng, DType::f32, shape, 2.0);
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  for (int64_t i = 0; rows >= 3 && i < d; ++i) {
    set_element(x, i, element(x, i) * 1e4);
    set_element(x, 2 * d + i, element(x, 2 * d + i) * 1e-4);
  }
  return x;
}

}  // namespace

TEST(RmsNorm, WeightAndOnePlusWeight) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (DType wt : {DType::f32, DType::bf16, DType::f16})
      for (auto scale : {ops::NormScale::weight, ops::NormScale::one_plus_weight})
        for (auto shape : {std::initializer_list<int64_t>{1, 1}, {5, 37}, {3, 4, 64}, {2, 1000}}) {
          Tensor x = norm_input(*ob, rng, shape);
          const int64_t d = x.dim(-1);
          Tensor w = random_tensor(*ob, rng, wt, {d}, 1.5);
          Tensor y = nan_tensor(*ob, shape);
          ops::RmsNormParams p{1e-6f, scale};
          int64_t peak = pool_peak_during(ob->pool(), [&] { ops::rms_norm(ob->be(), x, w, y, p); });
          auto ref = ref::rms_norm(values(x), values(w), d, 1e-6, scale == ops::NormScale::one_plus_weight);
          EXPECT_TRUE(all_close(y, ref, kAtol, kRtol)) << dtype_name(wt) << " " << x.shape_string();
          EXPECT_TRUE(workspace_ok(peak, ops::norm_workspace_bytes()));
          ops::rms_norm(ob->be(), x, w, x, p);  // in place: same bits
          EXPECT_TRUE(bitwise_equal(x, y));
        }
  }
}

TEST(RmsNorm, EpsMattersForSmallRows) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Tensor x = random_tensor(ob, rng, DType::f32, {2, 16}, 1e-3);
  Tensor w = random_tensor(ob, rng, DType::f32, {16});
  Tensor y = nan_tensor(ob, {2, 16});
  ops::rms_norm(ob.be(), x, w, y, {1e-5f, ops::NormScale::weight});
  EXPECT_TRUE(all_close(y, ref::rms_norm(values(x), values(w), 16, 1e-5, false), kAtol, kRtol));
  EXPECT_FALSE(all_close(y, ref::rms_norm(values(x), values(w), 16, 1e-6, false), kAtol, kRtol));
}

TEST(GatedRmsNorm, Mamba2GateThenNormOverGroups) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int64_t T : {1, 7}) {
      // I = 48 channels in 4 groups of 12, weight [I] in bf16.
      Tensor x = norm_input(*ob, rng, {T, 48});
      Tensor z = random_tensor(*ob, rng, DType::f32, {T, 48}, 4.0);
      Tensor w = random_tensor(*ob, rng, DType::bf16, {48}, 1.5);
      Tensor y = nan_tensor(*ob, {T, 48});
      ops::GatedRmsNormParams p{1e-5f, 12, ops::GateOrder::gate_then_norm};
      int64_t peak = pool_peak_during(ob->pool(), [&] { ops::gated_rms_norm(ob->be(), x, z, w, y, p); });
      auto ref = ref::rms_norm_gate_then_norm(values(x), values(z), values(w), 48, 12, 1e-5);
      EXPECT_TRUE(all_close(y, ref, kAtol, kRtol));
      EXPECT_TRUE(workspace_ok(peak, ops::norm_workspace_bytes()));
      // The other order is a different function (the test would catch a swap).
      EXPECT_FALSE(
          all_close(y, ref::rms_norm_then_gate(values(x), values(z), values(w), 48, 12, 1e-5), kAtol, kRtol));
      ops::gated_rms_norm(ob->be(), x, z, w, z, p);  // in place over z
      EXPECT_TRUE(bitwise_equal(z, y));
    }
  }
}

TEST(GatedRmsNorm, DeltaNetNormThenGatePerHead) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int64_t T : {1, 5}) {
      // 3 value heads of 16, one weight [16] shared by every head; x viewed [T, 3, 16] and flat [T, 48].
      Tensor x = norm_input(*ob, rng, {T, 3, 16});
      Tensor z = random_tensor(*ob, rng, DType::f32, {T, 3, 16}, 4.0);
      Tensor w = random_tensor(*ob, rng, DType::f32, {16}, 1.5);
      Tensor y = nan_tensor(*ob, {T, 3, 16});
      ops::GatedRmsNormParams p{1e-6f, 16, ops::GateOrder::norm_then_gate};
      ops::gated_rms_norm(ob->be(), x, z, w, y, p);
      auto ref = ref::rms_norm_then_gate(values(x), values(z), values(w), 48, 16, 1e-6);
      EXPECT_TRUE(all_close(y, ref, kAtol, kRtol));
      Tensor flat = nan_tensor(*ob, {T, 48});
      ops::gated_rms_norm(ob->be(), x.reshape({T, 48}), z.reshape({T, 48}), w, flat, p);
      EXPECT_TRUE(bitwise_equal(flat.reshape({T, 3, 16}), y));
      EXPECT_THROW(ops::gated_rms_norm(ob->be(), x, z, w, z, p), Error);  // would read z after writing it
    }
  }
}

TEST(L2Norm, MatchesReferenceIncludingZeroRows) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor x = norm_input(*ob, rng, {4, 2, 33});
    for (int64_t i = 0; i < 33; ++i)
      set_element(x, 33 + i, 0.0);  // row 1 all zeros → zeros (eps keeps it finite)
    Tensor y = nan_tensor(*ob, {4, 2, 33});
    ops::l2_norm(ob->be(), x, y, 1e-6f);
    EXPECT_TRUE(all_close(y, ref::l2_norm(values(x), 33, 1e-6), kAtol, kRtol));
  }
}

TEST(RmsNorm, RowAloneEqualsRowInBatch) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor x = norm_input(*ob, rng, {37, 96});
    Tensor z = random_tensor(*ob, rng, DType::f32, {37, 96});
    Tensor w = random_tensor(*ob, rng, DType::bf16, {96});
    Tensor all = nan_tensor(*ob, {37, 96}), one = nan_tensor(*ob, {1, 96});
    ops::gated_rms_norm(ob->be(), x, z, w, all, {1e-5f, 24, ops::GateOrder::gate_then_norm});
    ops::gated_rms_norm(ob->be(), x.slice(0, 20, 1), z.slice(0, 20, 1), w, one,
                        {1e-5f, 24, ops::GateOrder::gate_then_norm});
    EXPECT_TRUE(bitwise_equal(one, all.slice(0, 20, 1)));
  }
}

TEST(RmsNorm, ShapeErrors) {
  OpBackend& ob = *op_backends().front();
  Tensor x = Tensor::empty(ob.pool(), DType::f32, {4, 12}, "x");
  Tensor y = Tensor::empty(ob.pool(), DType::f32, {4, 12}, "y");
  Tensor w11 = Tensor::empty(ob.pool(), DType::f32, {11}, "w");
  Tensor w12 = Tensor::empty(ob.pool(), DType::f32, {12}, "w");
  Tensor w5 = Tensor::empty(ob.pool(), DType::f32, {5}, "w");
  try {
    ops::rms_norm(ob.be(), x, w11, y, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weight must be [12], got [11]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::gated_rms_norm(ob.be(), x, y, w12, y, {1e-5f, 5, ops::GateOrder::gate_then_norm}), Error);
  EXPECT_THROW(ops::gated_rms_norm(ob.be(), x, y, w5, y, {1e-5f, 4, ops::GateOrder::gate_then_norm}), Error);
}
