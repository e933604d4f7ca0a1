// The shipped default model (models/keel-brown-nemotron-h-8m, a real nemotron_h folder) scored as its
// eval/valid_nll.json was made by transformers (fp32, log-softmax in float64): each document cut into pieces
// of 511 tokens, each run from a fresh state as [<|endoftext|>] + piece. The first two held-out documents
// keep the test to a few seconds; `keel perplexity` runs all 25.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "models/loader.h"
#include "models/scoring.h"

namespace keel::testing {
namespace {

TEST(DefaultModel, PerplexityMatchesTransformers) {
  const std::string dir = std::string(KEEL_SOURCE_DIR) + "/models/keel-brown-nemotron-h-8m";
  std::ifstream in(dir + "/eval/valid_nll.json");
  ASSERT_TRUE(in) << dir;
  const nlohmann::json ref = nlohmann::json::parse(in);
  MemoryPool pool("cpu", int64_t{4} << 30);
  CpuBackend be(pool, 2);
  models::LoadedModel m = models::load_model(dir, be);
  ASSERT_TRUE(m.config.bos_token_id.has_value());
  models::ScoreOptions opt;
  opt.ctx = 512;
  opt.chunk = 256;
  opt.bos = static_cast<int32_t>(*m.config.bos_token_id);  // <|endoftext|>, as the reference ran
  double sum = 0, ref_sum = 0, worst = 0;
  int64_t n = 0;
  for (size_t d = 0; d < 2; ++d) {
    const nlohmann::json& doc = ref["documents"][d];
    const std::vector<int32_t> ids = doc["token_ids"].get<std::vector<int32_t>>();
    const std::vector<double> want = doc["nll"].get<std::vector<double>>();
    models::Scores got;
    models::score_document(*m.model, ids, opt, got);
    ASSERT_EQ(got.nll.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(got.nll[i] - want[i]));
      sum += got.nll[i];
      ref_sum += want[i];
    }
    n += static_cast<int64_t>(want.size());
  }
  const double ppl = std::exp(sum / double(n)), ref_ppl = std::exp(ref_sum / double(n));
  std::printf("default model, %lld tokens: keel ppl %.4f, transformers %.4f, max |Δ nll| %.2e\n",
              static_cast<long long>(n), ppl, ref_ppl, worst);
  EXPECT_LE(std::abs(ppl / ref_ppl - 1), 1e-3);
  // The reference is fp32 PyTorch (valid_nll.json keeps 6 decimals); per token, 1e-3 nats.
  EXPECT_LE(worst, 1e-3);
}

}  // namespace
}  // namespace keel::testing
