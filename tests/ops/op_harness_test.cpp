// The harness checks themselves: each must reject a planted difference, or op tests could pass vacuously.
#include "op_harness.h"

using namespace keel;
using namespace keel::testing;

TEST(OpHarness, AllCloseNamesTheWorstElement) {
  std::vector<double> ref = {1.0, 2.0, 3.0, 4.0};
  EXPECT_TRUE(all_close(std::vector<double>{1.0, 2.0, 3.0, 4.0}, ref, 0, 0));
  EXPECT_TRUE(all_close(std::vector<double>{1.0, 2.0 + 1e-7, 3.0, 4.0}, ref, 1e-6, 0));
  auto r = all_close(std::vector<double>{1.1, 2.0, 3.5, 4.0}, ref, 0.01, 0.01);
  ASSERT_FALSE(r);
  std::string msg = r.message();
  EXPECT_NE(msg.find("2 of 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("flat index 2"), std::string::npos) << msg;
  EXPECT_FALSE(all_close(std::vector<double>{1.0, NAN, 3.0, 4.0}, ref, 1, 1));
  EXPECT_FALSE(all_close(std::vector<double>{1.0}, ref, 1, 1));
}

TEST(OpHarness, BitwiseEqualSeesOneUlp) {
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor a = tensor_from(*ob, DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b = tensor_from(*ob, DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_TRUE(bitwise_equal(a, b));
    b.ptr<float>()[4] = std::nextafter(5.0f, 6.0f);
    auto r = bitwise_equal(a, b);
    EXPECT_FALSE(r);
    EXPECT_NE(std::string(r.message()).find("flat index 4"), std::string::npos) << r.message();
    // Strided view against a contiguous copy: column 1 of a is {2, 5}.
    Tensor col = a.strided_view({2}, {a.stride_bytes(0)}, 4);
    EXPECT_TRUE(bitwise_equal(col, tensor_from(*ob, DType::f32, {2}, {2, 5})));
  }
}

TEST(OpHarness, ValuesRoundTripEveryDtype) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  Tensor h =
      tensor_from(ob, DType::bf16, {3}, {1.0, 1.00390625, 3.0});  // 1 + 2^-8 is a bf16 tie: rounds to even
  EXPECT_EQ(values(h), (std::vector<double>{1.0, 1.0, 3.0}));
  Tensor f = tensor_from(ob, DType::f16, {2}, {0.5, 65504.0});
  EXPECT_EQ(values(f), (std::vector<double>{0.5, 65504.0}));
  Tensor r = random_tensor(ob, rng, DType::bf16, {4, 5}, 2.0);
  for (double x : values(r)) {
    EXPECT_LE(std::fabs(x), 2.0);
    EXPECT_EQ(static_cast<double>(bf16_to_f32(f32_to_bf16(static_cast<float>(x)))), x);
  }
}

TEST(OpHarness, WorkspaceBounds) {
  EXPECT_TRUE(workspace_ok(100, 100));
  EXPECT_TRUE(workspace_ok(100, 125));
  EXPECT_FALSE(workspace_ok(100, 126));
  EXPECT_FALSE(workspace_ok(101, 100));
  EXPECT_TRUE(workspace_ok(0, 0));
  EXPECT_FALSE(workspace_ok(0, 64));
  OpBackend& ob = *op_backends().front();
  Tensor keep = Tensor::empty(ob.pool(), DType::f32, {16}, "kept");
  int64_t peak = pool_peak_during(ob.pool(), [&] {
    Tensor a = Tensor::empty(ob.pool(), DType::f32, {100}, "scratch a");
    Tensor b = Tensor::empty(ob.pool(), DType::f32, {50}, "scratch b");
  });
  EXPECT_EQ(peak, 600);
}

TEST(OpHarness, BackendsCoverEveryIsaOfThisCpuAndTheReference) {
  std::vector<OpBackend*> all = op_backends();
  ASSERT_GE(all.size(), 3u);
  EXPECT_NE(all.front()->name.find("generic"), std::string::npos) << all.front()->name;
  // With a GPU the CUDA backend comes last, after the reference.
  const size_t gpu = all.back()->is_cuda() ? 1 : 0;
  OpBackend* best = all[all.size() - 2 - gpu];
  EXPECT_NE(best->name.find(cpu_isa_name(cpu_isa())), std::string::npos) << best->name;
  EXPECT_EQ(best->threads, 1);
  OpBackend* ref = all[all.size() - 1 - gpu];
  EXPECT_TRUE(ref->is_reference());
  EXPECT_NE(ref->name.find("reference"), std::string::npos) << ref->name;
  EXPECT_EQ(cpu_op_backends().size(), all.size() - 1 - gpu);
}
