// Random weights from config.json alone (models/random_weights.h), checked against the fixture folders that
// transformers wrote: the same tensor names and shapes as the model.safetensors beside the config, the same
// pool bytes as loading that file, values in the stated ranges, reproducible by seed, and a forward pass
// whose logits are finite and far from uniform.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "../fixtures/model_fixtures.h"
#include "model_test_util.h"
#include "models/random_weights.h"
#include "models/registry.h"

namespace keel::testing {
namespace {

// One fixture per registered model type (tests/fixtures/models.txt).
std::vector<std::string> fixtures() {
  return model_fixture_names();
}

double element(const Tensor& t, int64_t i) {
  const void* p = static_cast<const char*>(t.data()) + i * dtype_info(t.dtype()).block_bytes;
  switch (t.dtype()) {
    case DType::bf16:
      return bf16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::f16:
      return f16_to_f32(*static_cast<const uint16_t*>(p));
    default:
      return *static_cast<const float*>(p);
  }
}

TEST(RandomWeights, SameTensorsAndPoolBytesAsTheFixtureFiles) {
  ASSERT_GE(fixtures().size(), 3u);
  for (const std::string& name : fixtures()) {
    SCOPED_TRACE(name);
    WeightStore files = WeightStore::open(fixture_dir(name));
    ModelUnderTest real(fixture_dir(name));
    MemoryPool pool("cpu", int64_t{1} << 30);
    CpuBackend be(pool, 2);
    models::LoadedModel rnd = models::random_weights_model(fixture_dir(name), be, 7);
    // Every tensor in the file was bound with the file's shape, in the config's dtype (bf16; the file keeps a
    // few small buffers such as e_score_correction_bias in f32).
    int64_t elements = 0;
    for (const std::string& n : files.names()) {
      Tensor f = files.get(n);
      ASSERT_TRUE(rnd.weights->has(n)) << n << " was not asked for";
      std::vector<int64_t> shape(f.shape().begin(), f.shape().begin() + f.ndim());
      EXPECT_EQ(rnd.weights->get(n, shape).dtype(), DType::bf16) << n;
      elements += f.numel();
    }
    EXPECT_EQ(rnd.weights->parameter_count(), files.parameter_count());
    EXPECT_EQ(rnd.weights->total_bytes(), 2 * elements);
    // Loading the file reserves its bytes, random weights allocate theirs; the f32 copies the model makes are
    // the same either way.
    EXPECT_EQ(pool.in_use() - rnd.weights->total_bytes(), real.pool.in_use() - files.total_bytes());
  }
}

TEST(RandomWeights, ValuesInTheirRangesAndReproducible) {
  MemoryPool pool("cpu", int64_t{1} << 30);
  CpuBackend be2(pool, 2), be1(pool, 1);
  models::LoadedModel a = models::random_weights_model(fixture_dir("nemotron_h"), be2, 7);
  models::LoadedModel b = models::random_weights_model(fixture_dir("nemotron_h"), be1, 7);
  models::LoadedModel c = models::random_weights_model(fixture_dir("nemotron_h"), be2, 8);
  WeightStore files = WeightStore::open(fixture_dir("nemotron_h"));
  int checked_matrices = 0;
  for (const std::string& n : files.names()) {
    SCOPED_TRACE(n);
    Tensor f = files.get(n);
    std::vector<int64_t> shape(f.shape().begin(), f.shape().begin() + f.ndim());
    Tensor ta = a.weights->get(n, shape), tb = b.weights->get(n, shape), tc = c.weights->get(n, shape);
    // Same seed, any thread count: bitwise equal. Another seed: different.
    EXPECT_EQ(std::memcmp(ta.data(), tb.data(), static_cast<size_t>(ta.nbytes())), 0);
    if (ta.numel() > 4 && n.find("norm") == std::string::npos) {
      EXPECT_NE(std::memcmp(ta.data(), tc.data(), static_cast<size_t>(ta.nbytes())), 0);
    }
    const int64_t count = ta.numel();
    if (f.ndim() == 1 && n.find("norm") != std::string::npos) {
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(element(ta, i), 1.0);
      continue;
    }
    const double bound = f.ndim() == 1 ? 0.5 : std::sqrt(3.0 / static_cast<double>(shape.back()));
    double sum = 0, sq = 0, worst = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double v = element(ta, i);
      sum += v, sq += v * v, worst = std::max(worst, std::abs(v));
    }
    EXPECT_LE(worst, bound * (1 + 1.0 / 128));  // bf16 rounding may step past the bound by half an ulp
    if (count >= 4096) {                        // uniform on [−a, a): mean 0, variance a²/3
      const double mean = sum / count, var = sq / count - mean * mean;
      EXPECT_NEAR(mean, 0, 4 * bound / std::sqrt(3.0 * count));
      EXPECT_NEAR(var, bound * bound / 3, 0.05 * bound * bound / 3);
      ++checked_matrices;
    }
  }
  EXPECT_GT(checked_matrices, 5);
}

TEST(RandomWeights, LogitsFiniteAndFarFromUniform) {
  for (const std::string& name : fixtures()) {
    SCOPED_TRACE(name);
    MemoryPool pool("cpu", int64_t{1} << 30);
    CpuBackend be(pool, 2);
    models::LoadedModel m = models::random_weights_model(fixture_dir(name), be, 3);
    std::vector<int32_t> ids(700);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 300);
    auto state = m.model->new_state(static_cast<int64_t>(ids.size()));
    StepItem item{state.get(), ids, 1, nullptr};
    Tensor logits = m.model->forward({&item, 1});
    const int64_t V = m.model->vocab_size();
    const std::vector<double> lp = log_softmax_rows(logits.ptr<float>(), 1, V);
    double top = -1e300;
    for (double x : lp) {
      ASSERT_TRUE(std::isfinite(x));
      top = std::max(top, x);
    }
    // Uniform would give log(1/V) everywhere; the best token must be far likelier than that.
    EXPECT_GT(top, -std::log(static_cast<double>(V)) + 1.0) << "top log-prob " << top;
  }
}

// Random weights packed at a width (keel bench --random-weights --quantize): for the families whose MLX names
// are the Hugging Face ones (llama, qwen3), the same tensors, dtypes, shapes and bytes as the MLX folder
// tools/mlx_convert.py writes at that width (every matrix whose input splits into groups packed), and a
// forward pass whose logits are finite and far from uniform.
TEST(RandomWeights, PackedAtAWidthLikeTheMlxFolder) {
  for (const std::string name : {"llama", "qwen3"})
    for (auto [bits, group] : {std::pair{4, 64}, {3, 32}}) {
      SCOPED_TRACE(fmt::format("{} {}-bit group {}", name, bits, group));
      TempDir dir;
      const std::string cmd = fmt::format(
          "python3 {}/tools/mlx_convert.py quantize --src {} --out {} --bits {} --group-size {} > /dev/null",
          KEEL_SOURCE_DIR, fixture_dir(name), dir.path(), bits, group);
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      WeightStore files = WeightStore::open(dir.path());
      MemoryPool pool("cpu", int64_t{1} << 30);
      CpuBackend be(pool, 2);
      models::LoadedModel m =
          models::random_weights_model(fixture_dir(name), be, 5, QuantParams{bits, group});
      for (const std::string& n : files.names()) {
        ASSERT_TRUE(m.weights->has(n)) << n << " was not made";
        Tensor f = files.get(n), r = m.weights->get(n);
        EXPECT_EQ(r.dtype(), f.dtype()) << n;
        EXPECT_EQ(r.shape_string(), f.shape_string()) << n;
      }
      EXPECT_EQ(m.weights->total_bytes(), files.total_bytes());  // nothing made beyond the folder's tensors
      std::vector<int32_t> ids(50);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 300);
      auto state = m.model->new_state(static_cast<int64_t>(ids.size()));
      StepItem item{state.get(), ids, 1, nullptr};
      Tensor logits = m.model->forward({&item, 1});
      const int64_t V = m.model->vocab_size();
      const std::vector<double> lp = log_softmax_rows(logits.ptr<float>(), 1, V);
      double top = -1e300;
      for (double x : lp) {
        ASSERT_TRUE(std::isfinite(x));
        top = std::max(top, x);
      }
      EXPECT_GT(top, -std::log(static_cast<double>(V)) + 1.0) << "top log-prob " << top;
    }
}

TEST(RandomWeights, RefusedByThePoolWithTheTensorNamed) {
  MemoryPool pool("cpu", 100'000);
  CpuBackend be(pool, 1);
  try {
    models::random_weights_model(fixture_dir("llama"), be);
    FAIL() << "the weights do not fit 100 kB";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("weight"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pool.in_use(), 0);
}

}  // namespace
}  // namespace keel::testing
