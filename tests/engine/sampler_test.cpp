// The engine's TokenChooser (engine/sampler.h) against plain double computations: greedy picks the largest
// logit, logprobs are the raw logits' log-softmax, the alternatives are the best logits in order, a seed
// reproduces a sampled sequence.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace keel {
namespace {

std::vector<float> random_logits(uint64_t seed, int V) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(V));
  for (float& x : v) x = n(g);
  return v;
}

std::vector<double> log_softmax(const std::vector<float>& x) {
  double m = *std::max_element(x.begin(), x.end()), s = 0;
  for (float v : x) s += std::exp(double(v) - m);
  std::vector<double> out;
  for (float v : x) out.push_back(double(v) - m - std::log(s));
  return out;
}

TEST(Sampler, GreedyPicksTheBestLogitAndReportsItsLogprob) {
  MemoryPool pool("cpu", int64_t{1} << 30);
  CpuBackend be(pool, 2);
  SamplerConfig c;
  c.params.temperature = 0;
  c.top_logprobs = 5;
  auto chooser = make_sampler(be, c);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> x = random_logits(seed, 1000 + static_cast<int>(seed));
    const std::vector<double> lp = log_softmax(x);
    GeneratedToken t = chooser->choose(x, {});
    const auto best = std::max_element(x.begin(), x.end()) - x.begin();
    EXPECT_EQ(t.id, best);
    EXPECT_NEAR(t.logprob, lp[static_cast<size_t>(best)], 1e-5);
    std::vector<size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
    ASSERT_EQ(t.top.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(t.top[i].first, static_cast<int32_t>(order[i]));
      EXPECT_NEAR(t.top[i].second, lp[order[i]], 1e-5);
    }
  }
  EXPECT_EQ(pool.in_use(), 0);
}

TEST(Sampler, SeedReproducesASampledSequence) {
  MemoryPool pool("cpu", int64_t{1} << 30);
  CpuBackend be(pool, 1);
  SamplerConfig c;
  c.params.temperature = 1.0f;
  c.params.top_p = 0.95f;
  auto draw = [&](uint64_t seed) {
    c.seed = seed;
    auto chooser = make_sampler(be, c);
    std::vector<int32_t> ids;
    for (uint64_t s = 0; s < 50; ++s) ids.push_back(chooser->choose(random_logits(100 + s, 64), ids).id);
    return ids;
  };
  const std::vector<int32_t> a = draw(7), b = draw(7), other = draw(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);  // 50 draws over flat-ish distributions: a coincidence has probability far below 1e-9
  for (int32_t id : a) EXPECT_TRUE(id >= 0 && id < 64);
}

TEST(Sampler, LogitBiasPlus100MakesGreedyPickItAndMinus100BansTheArgmax) {
  MemoryPool pool("cpu", int64_t{1} << 30);
  CpuBackend be(pool, 2);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const std::vector<float> x = random_logits(seed, 500);
    std::vector<size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
    const int32_t best = static_cast<int32_t>(order[0]), second = static_cast<int32_t>(order[1]);
    const int32_t worst = static_cast<int32_t>(order.back());
    SamplerConfig c;
    c.params.temperature = 0;
    c.logit_bias = {{worst, 100.0f}};
    GeneratedToken t = make_sampler(be, c)->choose(x, {});
    EXPECT_EQ(t.id, worst) << "+100 on the least likely token";
    EXPECT_NEAR(t.logprob, log_softmax(x)[static_cast<size_t>(worst)], 1e-5) << "logprobs stay the model's";
    c.logit_bias = {{best, -100.0f}};
    EXPECT_EQ(make_sampler(be, c)->choose(x, {}).id, second) << "-100 bans the argmax";
    // Sampling never draws a banned token either: ban all but two, then only those two come out.
    c.params.temperature = 1.0f;
    c.seed = seed;
    c.logit_bias.clear();
    for (size_t i = 2; i < order.size(); ++i)
      c.logit_bias.emplace_back(static_cast<int32_t>(order[i]), -100.0f);
    auto sampler = make_sampler(be, c);
    for (int k = 0; k < 50; ++k) {
      int32_t id = sampler->choose(x, {}).id;
      EXPECT_TRUE(id == best || id == second) << id;
    }
  }
}

}  // namespace
}  // namespace keel
