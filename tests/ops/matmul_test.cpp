// ops::matmul against the double reference (ops/reference/matmul_ref), on every backend, every weight dtype.
#include "ops/matmul.h"

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/matmul_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// fp32 FMA dot products of length `in` against exact double sums: rtol 1e-5 plus atol 1e-6·sqrt(in)·max|ref|
// (rounding error of an fp32 sum grows like sqrt(in) for random signs). A dropped or doubled term is ~0.1–1.
void expect_matches(const Tensor& y, const std::vector<double>& ref, int64_t in) {
  EXPECT_TRUE(all_close(y, ref, 1e-6 * std::sqrt(static_cast<double>(in)) * max_abs(ref), 1e-5));
}

// Packed cases: outputs may cancel to far below their terms (one output, 32 terms), so the absolute allowance
// also scales with the largest Σ_k |x·w| of any output: 3e-7·sqrt(in) of it (fp32 rounding of `in` terms,
// ε = 6e-8, grows like sqrt(in)·ε·Σ|terms|; a dropped or doubled term is ~1/in of it).
void expect_matches_terms(const Tensor& y, const std::vector<double>& ref, const std::vector<double>& x,
                          const std::vector<double>& w, int64_t T, int64_t in, int64_t out) {
  double terms = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < in; ++k)
        sum += std::fabs(x[static_cast<size_t>(t * in + k)] * w[static_cast<size_t>(o * in + k)]);
      terms = std::max(terms, sum);
    }
  const double sq = std::sqrt(static_cast<double>(in));
  EXPECT_TRUE(all_close(y, ref, 1e-6 * sq * max_abs(ref) + 3e-7 * sq * terms, 1e-5));
}

struct Shape {
  int64_t T, in, out;
};

}  // namespace

TEST(Matmul, MatchesReferenceAtAwkwardSizes) {
  KEEL_TEST_RNG(rng);
  // T = 1 and < 8 (in-register widening), ≥ 8 (panels; T mod 6 = 1, 2, 3, 4); in not a multiple of 8/16 and
  // > 512 (k blocks); out odd, > one panel of 64.
  const Shape shapes[] = {{1, 1, 1},    {1, 37, 5},     {2, 16, 3},     {3, 64, 17},  {5, 100, 33},
                          {7, 129, 65}, {8, 8, 16},     {9, 200, 130},  {37, 47, 71}, {13, 513, 19},
                          {64, 64, 64}, {1, 1000, 257}, {10, 1100, 70}, {11, 40, 9}};
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (DType wt : {DType::f32, DType::bf16, DType::f16})
      for (const Shape& s : shapes) {
        SCOPED_TRACE(fmt::format("{} T={} in={} out={}", dtype_name(wt), s.T, s.in, s.out));
        Tensor x = random_tensor(*ob, rng, DType::f32, {s.T, s.in});
        Tensor w = random_tensor(*ob, rng, wt, {s.out, s.in});
        Tensor y = nan_tensor(*ob, {s.T, s.out});
        int64_t peak = pool_peak_during(ob->pool(), [&] { ops::matmul(ob->be(), x, w, y); });
        expect_matches(y, ref::matmul(values(x), values(w), {}, s.T, s.in, s.out), s.in);
        EXPECT_TRUE(workspace_ok(peak, ops::matmul_workspace_bytes(ob->be(), s.T, s.in, s.out, wt)));
      }
  }
}

TEST(Matmul, BiasAndStridedRows) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int64_t T : {1, 11}) {
      // x is columns [3, 3 + 45) of a [T, 60] tensor; w rows 2..31 of a [40, 45] tensor; y a column slice
      // too.
      Tensor xs = random_tensor(*ob, rng, DType::f32, {T, 60});
      Tensor ws = random_tensor(*ob, rng, DType::bf16, {40, 45});
      Tensor bias = random_tensor(*ob, rng, DType::f32, {30});
      Tensor ys = nan_tensor(*ob, {T, 50});
      Tensor x = xs.slice(1, 3, 45), w = ws.slice(0, 2, 30), y = ys.slice(1, 7, 30);
      ops::matmul(ob->be(), x, w, bias, y);
      expect_matches(y, ref::matmul(values(x), values(w), values(bias), T, 45, 30), 45);
      EXPECT_TRUE(std::isnan(element(ys, 6)) && std::isnan(element(ys, 37))) << "wrote outside the y view";
    }
  }
}

// docs/OPS.md batch invariance: a row's bits do not depend on T, on the path (T = 1 widens weights in
// registers, T = 37 through panels and k blocks of 512), or on the thread count.
TEST(Matmul, BatchInvariantBitwise) {
  KEEL_TEST_RNG(rng);
  std::vector<OpBackend*> all = op_backends();
  // in: past a multiple of 32 by 9 and by 26 (bf16's pair order pads to 32: both halves of a block partial)
  for (int64_t in : {int64_t{1033}, int64_t{1050}})
    for (DType wt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(wt)) + " in " + std::to_string(in));
      OpBackend& first = *all.front();
      Tensor x = random_tensor(first, rng, DType::f32, {37, in});
      Tensor w = random_tensor(first, rng, wt, {150, in});
      Tensor bias = random_tensor(first, rng, DType::f32, {150});
      std::vector<Tensor> batch_results;
      for (OpBackend* ob : all) {
        SCOPED_TRACE(ob->name);
        Tensor y = nan_tensor(*ob, {37, 150});
        ops::matmul(ob->be(), x, w, bias, y);
        for (int64_t t : {0, 17, 36}) {
          Tensor alone = nan_tensor(*ob, {1, 150});
          ops::matmul(ob->be(), x.slice(0, t, 1), w, bias, alone);
          EXPECT_TRUE(batch_invariant(*ob, alone, y.slice(0, t, 1))) << "row " << t;
          Tensor five = nan_tensor(*ob, {5, 150});  // in-register path with a partial row tile
          ops::matmul(ob->be(), x.slice(0, t > 4 ? t - 4 : t, 5), w, bias, five);
          EXPECT_TRUE(batch_invariant(*ob, five.slice(0, t > 4 ? 4 : 0, 1), y.slice(0, t, 1))) << "row " << t;
        }
        if (ob->is_cpu()) batch_results.push_back(y);
      }
      // The CPU's last two backends are the best ISA with 3 threads and with 1 thread.
      size_t n = batch_results.size();
      EXPECT_TRUE(bitwise_equal(batch_results[n - 1], batch_results[n - 2])) << "3 threads vs 1 thread";
    }
}

// Offsets past 2^31 and 2^32: x, w and y rows 2^32 + 64 bytes apart in a sparse address range (pages
// committed only where rows live). T = 9 takes the panel path, T = 2 the in-register path.
TEST(Matmul, RowStridesPastTwoToThe32) {
  KEEL_TEST_RNG(rng);
  const int64_t stride = (int64_t{1} << 32) + 64, in = 40, out = 3;
  SparseArena arena(10 * stride + (1 << 20));
  ASSERT_TRUE(arena.ok());
  for (int64_t m = 0; m < 10; ++m) arena.commit(m * stride, 3 * 4096);
  Tensor base = Tensor::borrow(arena.base(), DType::f32, {1});
  Tensor wbase = Tensor::borrow(arena.base(), DType::bf16, {1});
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    if (ob->is_cuda())
      continue;  // the sparse range is host memory (the CUDA kernels' offsets are not run here)
    for (int64_t T : {2, 9}) {
      Tensor x = base.strided_view({T, in}, {stride, 4});
      Tensor w = wbase.strided_view({out, in}, {stride, 2}, 4096);
      Tensor y = base.strided_view({T, out}, {stride, 4}, 8192);
      for (int64_t i = 0; i < x.numel(); ++i) set_element(x, i, rng.uniform());
      for (int64_t i = 0; i < w.numel(); ++i) set_element(w, i, rng.uniform());
      for (int64_t i = 0; i < y.numel(); ++i) set_element(y, i, NAN);
      ops::matmul(ob->be(), x, w, y);
      expect_matches(y, ref::matmul(values(x), values(w), {}, T, in, out), in);
    }
  }
}

TEST(Matmul, ShapeErrorsNameTheTensor) {
  OpBackend& ob = *op_backends().front();
  Tensor x = Tensor::empty(ob.pool(), DType::f32, {4, 10}, "x");
  Tensor w = Tensor::empty(ob.pool(), DType::bf16, {6, 11}, "w");
  Tensor y = Tensor::empty(ob.pool(), DType::f32, {4, 6}, "y");
  try {
    ops::matmul(ob.be(), x, w, y);
    FAIL() << "in mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("x must be [*, 11], got [4, 10]"), std::string::npos) << e.what();
  }
  Tensor w2 = Tensor::empty(ob.pool(), DType::i32, {6, 10}, "w");
  EXPECT_THROW(ops::matmul(ob.be(), x, w2, y), Error);
  Tensor w3 = Tensor::empty(ob.pool(), DType::f32, {5, 10}, "w");
  EXPECT_THROW(ops::matmul(ob.be(), x, w3, y), Error);
  Tensor bad_bias = Tensor::empty(ob.pool(), DType::f32, {5}, "bias");
  Tensor w4 = Tensor::empty(ob.pool(), DType::f32, {6, 10}, "w");
  EXPECT_THROW(ops::matmul(ob.be(), x, w4, bad_bias, y), Error);
  Tensor strided_rows = Tensor::empty(ob.pool(), DType::f32, {4, 20}, "x").strided_view({4, 10}, {80, 8});
  EXPECT_THROW(ops::matmul(ob.be(), strided_rows, w4, y), Error);
}

// Packed weights: the reference backend dequantizes them (the oracle here is the test's own bit packing and
// scale·q + bias); a backend without a packed kernel says so through supports() and the op throws
// Error(unsupported) naming the op, the backend and the format. 3 and 5 bits cross word boundaries.
TEST(Matmul, PackedWeightsOnEveryBackend) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int32_t bits : {2, 3, 4, 5, 8})
      for (int64_t T : {1, 9}) {
        SCOPED_TRACE(fmt::format("bits={} T={}", bits, T));
        const int64_t in = 192, out = 7;
        PackedCase c = make_packed(*ob, rng, out, in, bits, 64);
        EXPECT_EQ(c.w.rows(), out);
        EXPECT_EQ(c.w.cols(), in);
        EXPECT_EQ(c.w.nbytes(), out * in * bits / 8 + 2 * out * (in / 64) * 2);
        Tensor x = random_tensor(*ob, rng, DType::f32, {T, in});
        Tensor y = nan_tensor(*ob, {T, out});
        if (!ob->be().supports(Op::matmul, DType::u32)) {
          try {
            ops::matmul(ob->be(), x, c.w, y);
            ADD_FAILURE() << "no error";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::unsupported);
            const std::string msg = e.what();
            EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
            EXPECT_NE(msg.find(ob->name), std::string::npos) << msg;
            EXPECT_NE(msg.find(fmt::format("{}-bit", bits)), std::string::npos) << msg;
          }
          continue;
        }
        ops::matmul(ob->be(), x, c.w, y);
        expect_matches(y, ref::matmul(values(x), c.dense, {}, T, in, out), in);
      }
  }
}

TEST(Matmul, PackedShapeErrorsNameTheTensor) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().back();
  Tensor words = Tensor::empty(ob.pool(), DType::u32, {4, 24}, "words");  // 4 bits: 192 columns
  Tensor scales = random_tensor(ob, rng, DType::bf16, {4, 3});
  EXPECT_THROW(Weight::packed(words, scales, scales, 7, 64, "w"), Error);   // 7 bits
  EXPECT_THROW(Weight::packed(words, scales, scales, 4, 100, "w"), Error);  // groups do not divide
  EXPECT_THROW(Weight::packed(words, scales, scales, 4, 32, "w"), Error);   // 6 groups expected
  Tensor scales12 = random_tensor(ob, rng, DType::bf16, {4, 12});
  try {  // 12 groups of 16 fit the shapes, but 16 is not a group size MLX (or any kernel here) has
    (void)Weight::packed(words, scales12, scales12, 4, 16, "w");
    ADD_FAILURE() << "group size 16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("32, 64 or 128"), std::string::npos) << e.what();
  }
  Weight w = Weight::packed(words, scales, scales, 4, 64, "w");
  Tensor x = random_tensor(ob, rng, DType::f32, {2, 100}), y = nan_tensor(ob, {2, 4});
  try {
    ops::matmul(ob.be(), x, w, y);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("[*, 192]"), std::string::npos) << e.what();
  }
}

// Packed weights at every bit width and group size against the harness's own bit packing (W = scale·q +
// bias in double): T on both paths (< 8: dequantized in registers; ≥ 8: panels of 64, with T mod 6 = 1..5),
// out odd, below one tile, past one panel; in one group, several, and past a k block of 512. Scales in bf16,
// f16 and f32 (the product scale·q is exact for the 16-bit ones). Plus the planned workspace.
TEST(Matmul, PackedMatchesReferenceEveryBitsAndGroup) {
  KEEL_TEST_RNG(rng);
  struct PShape {
    int64_t T, groups, out;
  };
  const PShape shapes[] = {{1, 1, 1}, {2, 3, 5}, {7, 2, 67}, {8, 1, 16}, {13, 9, 33}, {37, 5, 130}};
  const DType scale_dtypes[] = {DType::bf16, DType::f16, DType::f32};
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    int n = 0;
    for (int32_t bits : {2, 3, 4, 5, 6, 8})
      for (int32_t group : {32, 64, 128})
        for (const PShape& s : shapes) {
          const DType sd = scale_dtypes[n++ % 3];
          const int64_t in = s.groups * group;
          SCOPED_TRACE(fmt::format("bits={} group={} scales {} T={} in={} out={}", bits, group,
                                   dtype_name(sd), s.T, in, s.out));
          PackedCase c = make_packed(*ob, rng, s.out, in, bits, group, sd, 0.1 / (1 << bits), 0.05);
          Tensor x = random_tensor(*ob, rng, DType::f32, {s.T, in});
          Tensor y = nan_tensor(*ob, {s.T, s.out});
          int64_t peak = pool_peak_during(ob->pool(), [&] { ops::matmul(ob->be(), x, c.w, y); });
          const std::vector<double> xv = values(x);
          expect_matches_terms(y, ref::matmul(xv, c.dense, {}, s.T, in, s.out), xv, c.dense, s.T, in, s.out);
          EXPECT_TRUE(workspace_ok(peak, ops::matmul_workspace_bytes(ob->be(), s.T, in, s.out, c.w)));
        }
  }
}

// A packed weight's row view (a fused gate_up's half: words, scales and biases rows offset together), a bias,
// strided x and y.
TEST(Matmul, PackedRowViewBiasAndStridedRows) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int32_t bits : {3, 4, 6})
      for (int64_t T : {1, 11}) {
        SCOPED_TRACE(fmt::format("bits={} T={}", bits, T));
        const int64_t in = 128;
        PackedCase c = make_packed(*ob, rng, 40, in, bits, 32, DType::bf16, 0.02, 0.1);
        Weight w = c.w.slice_rows(9, 30);
        std::vector<double> dense(c.dense.begin() + 9 * in, c.dense.begin() + 39 * in);
        Tensor xs = random_tensor(*ob, rng, DType::f32, {T, in + 20});
        Tensor bias = random_tensor(*ob, rng, DType::f32, {30});
        Tensor ys = nan_tensor(*ob, {T, 50});
        Tensor x = xs.slice(1, 5, in), y = ys.slice(1, 7, 30);
        ops::matmul(ob->be(), x, w, bias, y);
        expect_matches(y, ref::matmul(values(x), dense, values(bias), T, in, 30), in);
        EXPECT_TRUE(std::isnan(element(ys, 6)) && std::isnan(element(ys, 37))) << "wrote outside the y view";
      }
  }
}

// docs/OPS.md batch invariance for packed weights: a row's bits do not depend on T (decode in registers —
// on AVX-512 through lookup tables for 2–5 bits — vs prefill panels of 64, k blocks of 512) or on the
// thread count. Rows of 17 groups of 64, and of 68 groups of 32 (decode widens the scales 64 groups at a
// time: the second batch starts inside the row).
TEST(Matmul, PackedBatchInvariantBitwise) {
  KEEL_TEST_RNG(rng);
  // f32 scales too: their products s·q are rounded, so a path that fused s·q + b where the other did not
  // would show
  for (int32_t bits : {2, 3, 4, 5, 6, 8})
    for (DType sd : {DType::bf16, DType::f16, DType::f32})
      for (auto [in, group] : {std::pair<int64_t, int32_t>{1024 + 64, 64}, {2048 + 128, 32}}) {
        SCOPED_TRACE(fmt::format("bits={} scales {} in={} group={}", bits, dtype_name(sd), in, group));
        std::vector<Tensor> batch_results;
        OpBackend& first = *op_backends().front();
        const int64_t out = 150;
        PackedCase c = make_packed(first, rng, out, in, bits, group, sd, 0.1 / (1 << bits), 0.05);
        Tensor x = random_tensor(first, rng, DType::f32, {37, in});
        Tensor bias = random_tensor(first, rng, DType::f32, {out});
        for (OpBackend* ob : op_backends()) {
          SCOPED_TRACE(ob->name);
          Tensor y = nan_tensor(*ob, {37, out});
          ops::matmul(ob->be(), x, c.w, bias, y);
          for (int64_t t : {0, 17, 36}) {
            Tensor alone = nan_tensor(*ob, {1, out});
            ops::matmul(ob->be(), x.slice(0, t, 1), c.w, bias, alone);
            EXPECT_TRUE(batch_invariant(*ob, alone, y.slice(0, t, 1))) << "row " << t;
            Tensor nine = nan_tensor(*ob, {9, out});  // the prefill path at another T
            const int64_t t0 = t > 8 ? t - 8 : t;
            ops::matmul(ob->be(), x.slice(0, t0, 9), c.w, bias, nine);
            EXPECT_TRUE(batch_invariant(*ob, nine.slice(0, t - t0, 1), y.slice(0, t, 1))) << "row " << t;
          }
          if (ob->is_cpu()) batch_results.push_back(y);
        }
        size_t n = batch_results.size();
        EXPECT_TRUE(bitwise_equal(batch_results[n - 1], batch_results[n - 2])) << "3 threads vs 1 thread";
      }
}
