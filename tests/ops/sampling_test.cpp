// ops/sampling.h against an independent double computation of the distribution the filters imply (written
// here from the documented semantics), hand-worked cases, and chi-square tests of the draws.
#include "ops/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "core/error.h"
#include "op_harness.h"
#include "sampling_rows_cases.h"

using namespace keel;
using namespace keel::testing;
using ops::SamplingParams;

namespace {

// penalties → top-k → top-p → min-p → temperature, in double, ties toward the lower id.
std::vector<double> expected_distribution(std::vector<double> l, const SamplingParams& p,
                                          const std::vector<int32_t>& history) {
  const int64_t V = static_cast<int64_t>(l.size());
  std::map<int32_t, int> counts;
  for (int32_t h : history) ++counts[h];
  for (auto [id, n] : counts) {
    double& v = l[static_cast<size_t>(id)];
    if (p.repetition_penalty != 1.0f) v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    v -= p.presence_penalty + static_cast<double>(p.frequency_penalty) * n;
  }
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
  std::vector<double> out(static_cast<size_t>(V), 0.0);
  if (p.temperature == 0) {
    out[static_cast<size_t>(order[0])] = 1;
    return out;
  }
  if (p.top_k > 0 && p.top_k < V) order.resize(static_cast<size_t>(p.top_k));
  const double lmax = l[static_cast<size_t>(order[0])];
  if (p.top_p < 1) {
    double z = 0, cum = 0;
    for (int64_t id : order) z += std::exp(l[id] - lmax);
    for (size_t i = 0; i < order.size(); ++i) {
      cum += std::exp(l[order[i]] - lmax) / z;
      if (cum >= p.top_p) {
        order.resize(i + 1);
        break;
      }
    }
  }
  if (p.min_p > 0) std::erase_if(order, [&](int64_t id) { return std::exp(l[id] - lmax) < p.min_p; });
  double z = 0;
  for (int64_t id : order) z += std::exp((l[id] - lmax) / p.temperature);
  for (int64_t id : order) out[static_cast<size_t>(id)] = std::exp((l[id] - lmax) / p.temperature) / z;
  return out;
}

// Upper α = 1e-6 point of chi-square with df degrees of freedom (Wilson–Hilferty; z = 4.753).
double chi2_critical(int df) {
  const double k = df, z = 4.753;
  return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
}

struct Case {
  const char* name;
  SamplingParams p;
  std::vector<int32_t> history;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"defaults", {}, {}});
  c.push_back({"temperature 0.7, top_k 10", {0.7f, 10}, {}});
  c.push_back({"top_p 0.8", {1.0f, 0, 0.8f}, {}});
  c.push_back({"min_p 0.1, temperature 1.5", {1.5f, 0, 1.0f, 0.1f}, {}});
  c.push_back({"everything", {0.8f, 20, 0.9f, 0.05f, 1.3f, 0.5f, 0.2f}, {3, 3, 7, 1, 3, 39, 0}});
  return c;
}

}  // namespace

TEST(Sampling, DistributionMatchesIndependentComputation) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensor logits = nan_tensor(ob, {40});
    for (int64_t i = 0; i < 40; ++i) set_element(logits, i, rng.normal(0, 2));
    Tensor probs = nan_tensor(ob, {40});
    int64_t peak = pool_peak_during(
        ob.pool(), [&] { ops::sampling_distribution(ob.be(), logits, c.p, c.history, probs); });
    std::vector<double> want = expected_distribution(values(logits), c.p, c.history);
    EXPECT_TRUE(all_close(probs, want, 1e-7, 1e-5));
    for (int64_t i = 0; i < 40; ++i)  // the same support exactly
      EXPECT_EQ(element(probs, i) > 0, want[static_cast<size_t>(i)] > 0) << "token " << i;
    EXPECT_TRUE(workspace_ok(peak, ops::sample_workspace_bytes(40, static_cast<int64_t>(c.history.size()))));
  }
}

// Draws follow the distribution: chi-square over 20000 draws at α = 1e-6, and no token outside the support.
TEST(Sampling, DrawsFollowTheDistribution) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensor logits = nan_tensor(ob, {40});
    for (int64_t i = 0; i < 40; ++i) set_element(logits, i, rng.normal(0, 2));
    std::vector<double> want = expected_distribution(values(logits), c.p, c.history);
    ops::SamplerRng sampler(rng.engine()());
    const int n = 20000;
    std::vector<int> counts(40, 0);
    for (int i = 0; i < n; ++i)
      ++counts[static_cast<size_t>(ops::sample(ob.be(), logits, c.p, c.history, sampler))];
    double chi2 = 0, rest_expected = 0, rest_seen = 0;
    int bins = 0;
    for (size_t i = 0; i < 40; ++i) {
      if (want[i] == 0) {
        EXPECT_EQ(counts[i], 0) << "token " << i << " is filtered out but was drawn";
        continue;
      }
      double e = want[i] * n;
      if (e < 5) {
        rest_expected += e, rest_seen += counts[i];
        continue;
      }
      chi2 += (counts[i] - e) * (counts[i] - e) / e, ++bins;
    }
    if (rest_expected >= 5)
      chi2 += (rest_seen - rest_expected) * (rest_seen - rest_expected) / rest_expected, ++bins;
    if (bins >= 2) {
      EXPECT_LT(chi2, chi2_critical(bins - 1)) << bins << " bins";
    }
  }
}

// Hand-worked: softmax(2, 1, 0, −1) = .644, .237, .087, .032; top_p 0.7 keeps {0, 1} (0.644 < 0.7, then
// 0.881), renormalized to e²/(e² + e) = .731 and .269.
TEST(Sampling, TopPKeepsTheCrossingToken) {
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = tensor_from(ob, DType::f32, {4}, {2, 1, 0, -1});
  Tensor probs = nan_tensor(ob, {4});
  ops::sampling_distribution(ob.be(), logits, {1.0f, 0, 0.7f}, {}, probs);
  const double e = std::exp(1.0);
  EXPECT_TRUE(all_close(probs, {e / (e + 1), 1 / (e + 1), 0, 0}, 1e-7, 1e-6));
  ops::sampling_distribution(ob.be(), logits, {1.0f, 0, 0.6f}, {}, probs);
  EXPECT_TRUE(all_close(probs, {1, 0, 0, 0}, 0, 0));
}

// Every logit −inf (all banned): min-p's weights are NaN and keep nothing, but a token is still drawn from
// the row (the first candidate), never from outside it.
TEST(Sampling, MinPOverAnAllBannedRowStillDrawsFromTheRow) {
  OpBackend& ob = *cpu_op_backends().back();
  const double ninf = -std::numeric_limits<double>::infinity();
  Tensor logits = tensor_from(ob, DType::f32, {5}, {ninf, ninf, ninf, ninf, ninf});
  ops::SamplerRng sampler(3);
  for (float top_p : {1.0f, 0.9f}) {
    SamplingParams p{1.0f, 0, top_p, 0.1f};
    const int32_t id = ops::sample(ob.be(), logits, p, {}, sampler);
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 5);
  }
}

// Hand-worked penalties: logits (2, −1, 0.5), history {0, 1, 1}, repetition 2, presence 0.5, frequency 0.25:
// token 0: 2/2 − 0.5 − 0.25 = 0.25; token 1: −1·2 − 0.5 − 0.5 = −3; token 2: 0.5 → greedy picks 2.
TEST(Sampling, PenaltiesThenGreedy) {
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = tensor_from(ob, DType::f32, {3}, {2, -1, 0.5});
  std::vector<int32_t> history = {0, 1, 1};
  ops::SamplerRng sampler(1);
  SamplingParams greedy{0.0f, 0, 1.0f, 0.0f, 2.0f, 0.5f, 0.25f};
  EXPECT_EQ(ops::sample(ob.be(), logits, greedy, history, sampler), 2);
  SamplingParams plain{0.0f};
  EXPECT_EQ(ops::sample(ob.be(), logits, plain, history, sampler), 0);
  // At temperature 1 the penalized logits are (0.25, −3, 0.5).
  Tensor probs = nan_tensor(ob, {3});
  ops::sampling_distribution(ob.be(), logits, {1.0f, 0, 1.0f, 0.0f, 2.0f, 0.5f, 0.25f}, history, probs);
  const double z = std::exp(0.25) + std::exp(-3.0) + std::exp(0.5);
  EXPECT_TRUE(all_close(probs, {std::exp(0.25) / z, std::exp(-3.0) / z, std::exp(0.5) / z}, 1e-7, 1e-6));
}

// A large flat-ish vocabulary makes top_p keep thousands of tokens (the partial sort grows past 64, 256,
// 1024).
TEST(Sampling, TopPOverALargeVocabulary) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = nan_tensor(ob, {20000});
  for (int64_t i = 0; i < 20000; ++i) set_element(logits, i, rng.normal(0, 0.5));
  Tensor probs = nan_tensor(ob, {20000});
  SamplingParams p{1.0f, 0, 0.95f};
  ops::sampling_distribution(ob.be(), logits, p, {}, probs);
  std::vector<double> want = expected_distribution(values(logits), p, {});
  EXPECT_TRUE(all_close(probs, want, 1e-9, 1e-5));
  int64_t kept = std::count_if(want.begin(), want.end(), [](double v) { return v > 0; });
  EXPECT_GT(kept, 4096);
}

TEST(Sampling, SeedReproducesDraws) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = random_tensor(ob, rng, DType::f32, {50});
  const uint64_t seed = rng.engine()();
  auto draws = [&](uint64_t s) {
    ops::SamplerRng sampler(s);
    std::vector<int32_t> d;
    for (int i = 0; i < 100; ++i) d.push_back(ops::sample(ob.be(), logits, {}, {}, sampler));
    return d;
  };
  EXPECT_EQ(draws(seed), draws(seed));
  EXPECT_NE(draws(seed), draws(seed + 1));
}

TEST(Argmax, RowsAndTies) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor logits = random_tensor(*ob, rng, DType::f32, {5, 1000});
    set_element(logits, 2 * 1000 + 10, 5.0);  // row 2: a tie at 10 and 700 → 10
    set_element(logits, 2 * 1000 + 700, 5.0);
    Tensor out = Tensor::empty(ob->pool(), DType::i32, {5}, "argmax");
    ops::argmax(ob->be(), logits, out);
    std::vector<double> v = values(logits);
    for (int64_t r = 0; r < 5; ++r) {
      auto row = v.begin() + r * 1000;
      EXPECT_EQ(element(out, r), std::max_element(row, row + 1000) - row) << "row " << r;
    }
    EXPECT_EQ(element(out, 2), 10);
  }
}

TEST(TopK, BestFirstWithLowerIdOnTies) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = random_tensor(ob, rng, DType::f32, {3, 300});
  set_element(logits, 400, 9.0);  // row 1: ids 100 and 250 tie at the top → 100 first
  set_element(logits, 550, 9.0);
  Tensor vals = nan_tensor(ob, {3, 7});
  Tensor idx = Tensor::empty(ob.pool(), DType::i32, {3, 7}, "indices");
  int64_t peak = pool_peak_during(ob.pool(), [&] { ops::top_k(ob.be(), logits, 7, vals, idx); });
  EXPECT_TRUE(workspace_ok(peak, ops::top_k_workspace_bytes(7)));
  std::vector<double> v = values(logits);
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<int64_t> order(300);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return v[r * 300 + a] > v[r * 300 + b]; });
    for (int64_t i = 0; i < 7; ++i) {
      EXPECT_EQ(element(idx, r * 7 + i), order[i]) << "row " << r << " rank " << i;
      EXPECT_EQ(element(vals, r * 7 + i), v[r * 300 + order[i]]);
    }
  }
  EXPECT_EQ(element(idx, 7), 100);
  EXPECT_EQ(element(idx, 8), 250);
}

TEST(Sampling, BadInputsAreErrors) {
  OpBackend& ob = *cpu_op_backends().back();
  Tensor logits = tensor_from(ob, DType::f32, {3}, {1, 2, 3});
  ops::SamplerRng sampler(1);
  std::vector<int32_t> bad_history = {0, 3};
  EXPECT_THROW(ops::sample(ob.be(), logits, {}, bad_history, sampler), Error);
  EXPECT_THROW(ops::sample(ob.be(), logits, {-1.0f}, {}, sampler), Error);
  EXPECT_THROW(ops::sample(ob.be(), logits, {1.0f, 0, 0.0f}, {}, sampler), Error);
  EXPECT_THROW(ops::sample(ob.be(), logits, {1.0f, 0, 1.0f, 1.5f}, {}, sampler), Error);
  EXPECT_THROW(ops::sample(ob.be(), logits, {1.0f, 0, 1.0f, 0.0f, 0.0f}, {}, sampler), Error);
  Tensor vals = nan_tensor(ob, {1, 4});
  Tensor idx = Tensor::empty(ob.pool(), DType::i32, {1, 4}, "indices");
  EXPECT_THROW(ops::top_k(ob.be(), logits.reshape({1, 3}), 4, vals, idx), Error);
}

// ---- sample_rows

// |got − want| ≤ tol, or both the same infinity (the logprob of a −inf logit).
::testing::AssertionResult logprob_near(double got, double want, double tol) {
  if (got == want || std::fabs(got - want) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "logprob " << got << ", want " << want << " (tolerance " << tol << ")";
}
// The host backends' sample_rows against ops::sample (itself checked above against the independent
// distribution and hand-worked cases) on a copy of the row with the bias added here, drawing the same
// uniform: the same token bitwise; logprobs against a double log-softmax of the raw row computed here,
// alternatives against a stable sort of it; the pool peak is sample_rows_bytes exactly.
TEST(SampleRows, HostBackendsMatchSampleWithTheSameUniform) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    if (!ob->be().host_addressable()) continue;
    SCOPED_TRACE(ob->name);
    const int64_t vocabs[] = {1, 2, 7, 64, 1000, 5000};
    for (int trial = 0; trial < 36; ++trial) {
      const int64_t V = vocabs[trial % 6], L = 1 + trial % 4, n = 1 + (trial * 7) % 9;
      SCOPED_TRACE("V " + std::to_string(V) + " L " + std::to_string(L) + " trial " + std::to_string(trial));
      auto c = random_rows_case(rng.engine(), L, V, n, trial % 2 == 0);
      Tensor logits = Tensor::empty(ob->pool(), DType::f32, {L, V}, "logits");
      ob->be().upload(c->logits.data(), L * V * 4, logits);
      std::vector<ops::SampledToken> out(static_cast<size_t>(n));
      const int64_t peak =
          pool_peak_during(ob->pool(), [&] { ops::sample_rows(ob->be(), logits, c->rows, out); });
      EXPECT_EQ(peak, ops::sample_rows_bytes(ob->be(), V, c->rows));
      {  // batch invariance: the last row alone gives the bits it gave in the batch
        std::vector<ops::SampledToken> alone(1);
        ops::sample_rows(ob->be(), logits, std::span(c->rows).last(1), alone);
        EXPECT_EQ(alone[0].id, out.back().id);
        EXPECT_EQ(alone[0].logprob, out.back().logprob);
        EXPECT_EQ(alone[0].top, out.back().top);
      }
      for (int64_t i = 0; i < n; ++i) {
        SCOPED_TRACE("row " + std::to_string(i));
        const ops::RowSampling& r = c->rows[static_cast<size_t>(i)];
        const float* raw = c->logits.data() + r.row * V;
        std::vector<float> biased(raw, raw + V);
        for (auto [id, b] : r.logit_bias)
          if (id >= 0 && id < V)
            biased[static_cast<size_t>(id)] =
                b <= -100.0f ? -std::numeric_limits<float>::infinity() : biased[static_cast<size_t>(id)] + b;
        Tensor bt = Tensor::empty(ob->pool(), DType::f32, {V}, "biased");
        ob->be().upload(biased.data(), V * 4, bt);
        ops::SamplerRng sampler(c->seeds[static_cast<size_t>(i)]);
        const int32_t want = ops::sample(ob->be(), bt, r.params, r.history, sampler);
        EXPECT_EQ(out[static_cast<size_t>(i)].id, want);
        // The RNG contract: one uniform per sampled token, none for greedy.
        ops::SamplerRng fresh(c->seeds[static_cast<size_t>(i)]);
        if (r.params.temperature > 0) fresh.uniform();
        EXPECT_EQ(sampler.uniform(), fresh.uniform());
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < V; ++j) m = std::max(m, double(raw[j]));
        for (int64_t j = 0; j < V; ++j) s += std::exp(double(raw[j]) - m);
        const double lse = m + std::log(s);
        EXPECT_TRUE(logprob_near(out[static_cast<size_t>(i)].logprob, double(raw[want]) - lse, 1e-5));
        std::vector<int32_t> order(static_cast<size_t>(V));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return raw[a] > raw[b]; });
        const auto& top = out[static_cast<size_t>(i)].top;
        ASSERT_EQ(static_cast<int64_t>(top.size()), std::min<int64_t>(r.top_logprobs, V));
        for (size_t k = 0; k < top.size(); ++k) {
          EXPECT_EQ(top[k].first, order[k]) << "alternative " << k;
          EXPECT_TRUE(logprob_near(top[k].second, double(raw[order[k]]) - lse, 1e-5)) << "alternative " << k;
        }
      }
    }
  }
}

// Hand-worked: a ban through logit_bias moves greedy to the runner-up, a repeated token's presence penalty
// moves it further, and a bad row (a history token outside the vocabulary) is an error naming it.
TEST(SampleRows, HandWorkedBiasPenaltyAndErrors) {
  for (OpBackend* ob : op_backends()) {
    if (!ob->be().host_addressable()) continue;
    SCOPED_TRACE(ob->name);
    const std::vector<float> x = {1.0f, 4.0f, 3.0f, 2.5f};
    Tensor logits = Tensor::empty(ob->pool(), DType::f32, {1, 4}, "logits");
    ob->be().upload(x.data(), 16, logits);
    const std::vector<std::pair<int32_t, float>> ban = {{1, -100.0f}};
    const std::vector<int32_t> history = {2, 2};
    std::vector<ops::RowSampling> rows(3);
    for (auto& r : rows) r.params.temperature = 0;
    rows[1].logit_bias = ban;  // 1 banned: 2 (3.0) is best
    rows[2].logit_bias = ban;
    rows[2].params.presence_penalty = 1.0f;  // 2 seen: 3.0 − 1 = 2.0 < 2.5: 3 is best
    rows[2].top_logprobs = 2;
    std::vector<ops::SampledToken> out(3);
    ops::sample_rows(ob->be(), logits, rows, out);
    rows[2].history = history;
    ops::sample_rows(ob->be(), logits, std::span(rows).subspan(2), std::span(out).subspan(2));
    EXPECT_EQ(out[0].id, 1);
    EXPECT_EQ(out[1].id, 2);
    EXPECT_EQ(out[2].id, 3);
    const double lse = std::log(std::exp(1.0) + std::exp(4.0) + std::exp(3.0) + std::exp(2.5));
    EXPECT_NEAR(out[2].logprob, 2.5 - lse, 1e-6);  // the raw row's, bias and penalty aside
    ASSERT_EQ(out[2].top.size(), 2u);
    EXPECT_EQ(out[2].top[0].first, 1);
    EXPECT_EQ(out[2].top[1].first, 2);
    const std::vector<int32_t> bad = {0, 4};
    rows[0].history = bad;
    EXPECT_THROW(ops::sample_rows(ob->be(), logits, rows, out), Error);
    EXPECT_THROW(ops::check_row_sampling(rows[0], 4), Error);
  }
}
