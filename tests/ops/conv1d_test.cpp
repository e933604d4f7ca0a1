// ops::causal_conv1d against ops/reference/conv1d_ref (double), on every backend: outputs and carried state,
// every split of a sequence into pieces (chunks shorter than the kernel, one token at a time), awkward
// widths.
#include "ops/conv1d.h"

#include <fmt/ranges.h>

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/conv1d_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// K-term f32 dot products against double: rtol 1e-6, atol 1e-6·(bound on Σ|terms|) — an output near zero is a
// cancellation of terms of that size, so its f32 error scales with them, not with max|ref|; silu adds the
// vector exp's ~2 ulp.
void expect_conv_close(const Tensor& out, const std::vector<double>& ref, double terms, bool silu) {
  EXPECT_TRUE(all_close(out, ref, 1e-6 * std::max(terms, max_abs(ref)), silu ? 3e-6 : 1e-6));
}

struct ConvInputs {
  Tensor x, w, bias, state0;
  // A bound on Σ|w·x| + |bias| of one output: K · max|x or state| · max|w| + max|bias|.
  double terms(int64_t K) const {
    const double xs = std::max(max_abs(values(x)), max_abs(values(state0)));
    return static_cast<double>(K) * xs * max_abs(values(w)) + max_abs(values(bias));
  }
};

ConvInputs make(OpBackend& ob, TestRng& rng, int64_t T, int64_t C, int64_t K, DType wt, bool hf_layout) {
  ConvInputs s;
  s.x = random_tensor(ob, rng, DType::f32, {T, C}, 2.0);
  s.w = hf_layout ? random_tensor(ob, rng, wt, {C, 1, K}) : random_tensor(ob, rng, wt, {C, K});
  s.bias = random_tensor(ob, rng, wt, {C});
  s.state0 = random_tensor(ob, rng, DType::f32, {K - 1, C});  // a sequence already under way
  return s;
}

Tensor copy_of(OpBackend& ob, const Tensor& t) {
  Tensor c = Tensor::empty(ob.pool(), t.dtype(), {t.dim(0), t.dim(1)}, "copy");
  std::memcpy(c.data(), t.data(), static_cast<size_t>(t.nbytes()));
  return c;
}

}  // namespace

TEST(CausalConv1d, OutputAndStateMatchReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (DType wt : {DType::f32, DType::bf16})
      for (int64_t K : {2, 4})
        for (int64_t T : {1, 2, 3, 9})
          for (int64_t C : {1, 70, 200}) {
            SCOPED_TRACE(fmt::format("{} K={} T={} C={}", dtype_name(wt), K, T, C));
            const bool silu = (T + C) % 2 == 0, hf_layout = C % 2 == 0;
            ConvInputs s = make(*ob, rng, T, C, K, wt, hf_layout);
            Tensor state = copy_of(*ob, s.state0);
            Tensor out = nan_tensor(*ob, {T, C});
            int64_t peak = pool_peak_during(
                ob->pool(), [&] { ops::causal_conv1d(ob->be(), s.x, s.w, s.bias, state, out, {silu}); });
            std::vector<double> ref_state = values(s.state0);
            std::vector<double> ref =
                ref::causal_conv1d(values(s.x), values(s.w), values(s.bias), ref_state, T, C, K, silu);
            expect_conv_close(out, ref, s.terms(K), silu);
            EXPECT_TRUE(all_close(state, ref_state, 0, 0)) << "state holds the last K−1 inputs exactly";
            EXPECT_TRUE(workspace_ok(peak, ops::causal_conv1d_workspace_bytes(ob->be(), T, C, K, wt)));
          }
  }
}

// Every split of a 11-token sequence into two pieces (T1 = 1..10, so pieces shorter than K−1 = 3 too), three
// pieces, and one token at a time: the outputs and final state are bit-identical to the whole sequence.
TEST(CausalConv1d, PiecesEqualWholeBitwise) {
  KEEL_TEST_RNG(rng);
  const int64_t T = 11, C = 77, K = 4;
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    ConvInputs s = make(*ob, rng, T, C, K, DType::bf16, true);
    Tensor whole_state = copy_of(*ob, s.state0);
    Tensor whole = nan_tensor(*ob, {T, C});
    ops::causal_conv1d(ob->be(), s.x, s.w, s.bias, whole_state, whole, {true});
    std::vector<std::vector<int64_t>> splits;
    for (int64_t t1 = 1; t1 < T; ++t1) splits.push_back({t1, T - t1});
    splits.push_back({2, 5, 4});
    splits.push_back({3, 3, 3, 2});
    splits.push_back(std::vector<int64_t>(T, 1));
    for (const auto& split : splits) {
      Tensor state = copy_of(*ob, s.state0);
      Tensor out = nan_tensor(*ob, {T, C});
      int64_t t0 = 0;
      for (int64_t len : split) {
        Tensor piece = out.slice(0, t0, len);
        ops::causal_conv1d(ob->be(), s.x.slice(0, t0, len), s.w, s.bias, state, piece, {true});
        t0 += len;
      }
      const std::string name = fmt::format("split {}", fmt::join(split, " "));
      EXPECT_TRUE(bitwise_equal(out, whole)) << name;
      EXPECT_TRUE(bitwise_equal(state, whole_state)) << name;
    }
  }
}

TEST(CausalConv1d, NewSequenceFromZeroStateMatchesPaddedConv) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  ConvInputs s = make(ob, rng, 6, 10, 4, DType::f32, false);
  Tensor state = tensor_from(ob, DType::f32, {3, 10}, std::vector<double>(30, 0.0));
  Tensor out = nan_tensor(ob, {6, 10});
  ops::causal_conv1d(ob.be(), s.x, s.w, Tensor(), state, out, {false});
  // F.conv1d(x, w, padding=K−1)[:T] without bias, written out directly.
  std::vector<double> xv = values(s.x), wv = values(s.w), ref(60);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t c = 0; c < 10; ++c)
      for (int64_t j = 0; j < 4; ++j)
        if (t + j - 3 >= 0) ref[t * 10 + c] += wv[c * 4 + j] * xv[(t + j - 3) * 10 + c];
  expect_conv_close(out, ref, s.terms(4), false);
}

TEST(CausalConv1d, Errors) {
  OpBackend& ob = *op_backends().front();
  Tensor x = Tensor::empty(ob.pool(), DType::f32, {5, 8}, "x");
  Tensor w = Tensor::empty(ob.pool(), DType::f32, {8, 4}, "w");
  Tensor state = Tensor::empty(ob.pool(), DType::f32, {3, 8}, "state");
  Tensor bad_state = Tensor::empty(ob.pool(), DType::f32, {4, 8}, "state");
  Tensor out = Tensor::empty(ob.pool(), DType::f32, {5, 8}, "out");
  EXPECT_THROW(ops::causal_conv1d(ob.be(), x, w, Tensor(), bad_state, out, {}), Error);
  EXPECT_THROW(ops::causal_conv1d(ob.be(), x, w, Tensor(), state, x, {}), Error);  // out over x
  Tensor w9 = Tensor::empty(ob.pool(), DType::f32, {9, 4}, "w");
  EXPECT_THROW(ops::causal_conv1d(ob.be(), x, w9, Tensor(), state, out, {}), Error);
}
