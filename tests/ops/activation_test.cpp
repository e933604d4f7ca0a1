// ops/activation.h against the double formulas of ops/reference/activation_ref, on every backend.
#include "ops/activation.h"

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/activation_ref.h"

using namespace keel;
using namespace keel::testing;
using ops::Activation;

namespace {

struct Tol {
  double atol, rtol;
};

// Vector exp (Cephes, ~2 ulp) and one division: rtol 1e-6 (~8 ulp). Near-zero outputs (silu far below 0
// flushes at x < −87.3 where the true value is < 1e-36): atol 1e-30. relu2: one rounding. gelu_*, softplus:
// libm float functions; gelu_tanh cancels in 1 + tanh(…) for x ≪ 0, so atol 1e-6 there.
Tol tolerance(Activation f) {
  switch (f) {
    case Activation::relu2:
      return {0, 1.2e-7};
    case Activation::gelu_tanh:
      return {1e-6, 1e-6};
    case Activation::gelu_erf:
      return {1e-7, 1e-6};
    default:
      return {1e-30, 1e-6};
  }
}

const Activation kAll[] = {Activation::silu,     Activation::sigmoid,   Activation::relu2,
                           Activation::gelu_erf, Activation::gelu_tanh, Activation::softplus};

// Uniform in [−20, 20] with the edges planted: 0, ±1e-3, ±30, ±87, ±90, ±100.
Tensor activation_input(OpBackend& ob, TestRng& rng, std::initializer_list<int64_t> shape) {
  Tensor x = random_tensor(ob, rng, DType::f32, shape, 20.0);
  const float edges[] = {0.0f, 1e-3f, -1e-3f, 30.0f, -30.0f, 87.0f, -87.0f, 90.0f, -90.0f, 100.0f, -100.0f};
  for (int64_t i = 0; i < x.numel() && i < 11; ++i) set_element(x, rng.integer(0, x.numel() - 1), edges[i]);
  return x;
}

}  // namespace

TEST(Activation, MatchesReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (Activation f : kAll) {
      SCOPED_TRACE(static_cast<int>(f));
      for (auto shape : {std::initializer_list<int64_t>{1, 1}, {3, 17}, {2, 3, 37}, {2, 5000}, {4099}}) {
        Tensor x = activation_input(*ob, rng, shape);
        Tensor y = nan_tensor(*ob, shape);
        int64_t peak = pool_peak_during(ob->pool(), [&] { ops::activation(ob->be(), x, y, f); });
        Tol tol = tolerance(f);
        EXPECT_TRUE(all_close(y, ref::activation(f, values(x)), tol.atol, tol.rtol)) << x.shape_string();
        EXPECT_TRUE(workspace_ok(peak, ops::activation_workspace_bytes()));
        // In place gives the same bits.
        ops::activation(ob->be(), x, x, f);
        EXPECT_TRUE(bitwise_equal(x, y));
      }
    }
  }
}

TEST(Activation, GatedProductMatchesReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (Activation f : {Activation::silu, Activation::relu2, Activation::gelu_tanh}) {
      Tensor g = activation_input(*ob, rng, {5, 77});
      Tensor u = random_tensor(*ob, rng, DType::f32, {5, 77}, 3.0);
      Tensor y = nan_tensor(*ob, {5, 77});
      ops::activation_mul(ob->be(), g, u, y, f);
      std::vector<double> ref = ref::activation(f, values(g)), uv = values(u);
      for (size_t i = 0; i < ref.size(); ++i) ref[i] *= uv[i];
      Tol tol = tolerance(f);
      EXPECT_TRUE(all_close(y, ref, 3 * tol.atol, tol.rtol + 1.2e-7));
    }
  }
}

// Every element takes the same vector path wherever it sits, so its bits do not depend on the batch, the row
// offset or the thread count. (Across ISAs they may differ: GCC contracts a·b + c into FMA under
// AVX2/AVX-512.)
TEST(Activation, BitsIndependentOfBatchAndThreads) {
  KEEL_TEST_RNG(rng);
  std::vector<OpBackend*> all = op_backends();
  Tensor x = activation_input(*all.front(), rng, {9, 45});
  for (Activation f : {Activation::silu, Activation::sigmoid, Activation::relu2}) {
    std::vector<Tensor> full;
    for (OpBackend* ob : all) {
      SCOPED_TRACE(ob->name);
      Tensor y = nan_tensor(*ob, {9, 45});
      ops::activation(ob->be(), x, y, f);
      Tensor alone = nan_tensor(*ob, {1, 45});
      ops::activation(ob->be(), x.slice(0, 4, 1), alone, f);
      EXPECT_TRUE(bitwise_equal(alone, y.slice(0, 4, 1)));
      Tensor part = nan_tensor(*ob, {1, 40});  // a row starting 5 elements in: different vector alignment
      ops::activation(ob->be(), x.slice(0, 4, 1).slice(1, 5, 40), part, f);
      EXPECT_TRUE(bitwise_equal(part, y.slice(0, 4, 1).slice(1, 5, 40)));
      if (ob->is_cpu()) full.push_back(y);  // the CPU's last two: its best ISA on 3 threads and on 1
    }
    EXPECT_TRUE(bitwise_equal(full[full.size() - 1], full[full.size() - 2])) << "3 threads vs 1 thread";
  }
}

TEST(Softmax, MatchesReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int64_t n : {1, 7, 33, 1000}) {
      Tensor x = random_tensor(*ob, rng, DType::f32, {3, n}, 30.0);
      Tensor y = nan_tensor(*ob, {3, n});
      int64_t peak = pool_peak_during(ob->pool(), [&] { ops::softmax(ob->be(), x, y); });
      // exp ~2 ulp per element, an f32 sum of n terms and one division: rtol 1e-5; atol 1e-12 for terms
      // e^{−60} below the max.
      EXPECT_TRUE(all_close(y, ref::softmax(values(x), n), 1e-12, 1e-5)) << "n=" << n;
      EXPECT_TRUE(workspace_ok(peak, ops::softmax_workspace_bytes()));
    }
    // Stable for huge logits (a naive e^x overflows).
    Tensor big = tensor_from(*ob, DType::f32, {1, 3}, {1000.0, 1001.0, 999.0});
    Tensor y = nan_tensor(*ob, {1, 3});
    ops::softmax(ob->be(), big, y);
    EXPECT_TRUE(all_close(y, ref::softmax(values(big), 3), 1e-7, 1e-5));
  }
}

TEST(Elementwise, AddAndMulAreOneRounding) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor a = random_tensor(*ob, rng, DType::f32, {3, 5001}, 10.0);
    Tensor b = random_tensor(*ob, rng, DType::f32, {3, 5001}, 10.0);
    Tensor s = nan_tensor(*ob, {3, 5001}), p = nan_tensor(*ob, {3, 5001});
    ops::add(ob->be(), a, b, s);
    ops::mul(ob->be(), a, b, p);
    std::vector<double> av = values(a), bv = values(b), sum(av.size()), prod(av.size());
    for (size_t i = 0; i < av.size(); ++i) sum[i] = av[i] + bv[i], prod[i] = av[i] * bv[i];
    // f32 add/mul is the exact result rounded once: within half an ulp (2^-24 relative).
    EXPECT_TRUE(all_close(s, sum, 0, 6e-8));
    EXPECT_TRUE(all_close(p, prod, 0, 6e-8));
  }
}

TEST(Activation, ShapeErrors) {
  OpBackend& ob = *op_backends().front();
  Tensor x = Tensor::empty(ob.pool(), DType::f32, {4, 10}, "x");
  Tensor wrong = Tensor::empty(ob.pool(), DType::f32, {4, 11}, "y");
  Tensor half = Tensor::empty(ob.pool(), DType::bf16, {4, 10}, "y");
  EXPECT_THROW(ops::activation(ob.be(), x, wrong, Activation::silu), Error);
  EXPECT_THROW(ops::activation(ob.be(), half, x, Activation::silu), Error);
  EXPECT_THROW(ops::softmax(ob.be(), x, wrong), Error);
  EXPECT_THROW(ops::add(ob.be(), x, wrong, x), Error);
  EXPECT_THROW(ops::activation_mul(ob.be(), x, wrong, x, Activation::silu), Error);
}
