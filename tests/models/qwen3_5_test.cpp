// qwen3_5 against transformers 5.17 (tests/fixtures/qwen3_5: 6 layers DDADDA; Gated DeltaNet Hk 2 / Hv 4, Dk
// 16, Dv 24, conv 4; gated attention 4 heads / 2 KV, head_dim 32 ≠ 64/4, q/k norms, partial RoPE 0.25; norms
// × (1 + w); SwiGLU MLPs; untied), and the published multimodal layout (tests/fixtures/qwen3_5_multimodal:
// the same text weights under model.language_model.* beside a vision tower) against the same reference.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "ops/attention.h"
#include "qwen3_5_test_util.h"

namespace keel::testing {
namespace {

const char* kName = "qwen3_5";
constexpr int64_t kChunk = 64;  // the DeltaNet chunk and the attention key tile
// Bitwise: the models run the recurrent DeltaNet form (token by token at every T), attention walks key tiles
// at fixed absolute boundaries, and matmul, norms and MoE are per row (docs/ARCHITECTURE.md).
constexpr double kChunkTolerance = 0;

TEST(Qwen3_5, DeltaNetBlockMatchesReference) {
  check_deltanet_block(kName, 0);
}
TEST(Qwen3_5, GatedAttentionBlockMatchesReference) {
  check_gated_attention_block(kName, 2);
}
TEST(Qwen3_5, HiddenStatesMatchReference) {
  check_hidden_states(kName);
}
TEST(Qwen3_5, PromptLogprobsMatchReference) {
  check_prompt_logprobs(kName);
}
TEST(Qwen3_5, HiddenStatesMatchReferenceOnReferenceBackend) {
  check_hidden_states(kName, 1e-5, TestBackend::reference);
}
TEST(Qwen3_5, PromptLogprobsMatchReferenceOnReferenceBackend) {
  check_prompt_logprobs(kName, 1e-3, TestBackend::reference);
}
TEST(Qwen3_5, DecodeTeacherForcedMatchesReference) {
  check_decode_teacher_forced(kName);
}
TEST(Qwen3_5, FreeGreedyMatchesReference) {
  check_free_greedy(kName);
}
TEST(Qwen3_5, ChunkedPrefillMatchesOneShot) {
  check_chunked_prefill(kName, kChunk, kChunkTolerance);
}
TEST(Qwen3_5, StateCopyAndTruncate) {
  check_state_copy_and_truncate(kName);
}
TEST(Qwen3_5, BatchInvariant) {
  check_batch_invariance(kName);
}
TEST(Qwen3_5, TransientPlanBoundsMeasuredPeak) {
  check_transient_plan(kName);
}
TEST(Qwen3_5, LoadErrorsNameTheProblem) {
  check_qwen3_5_load_errors(
      kName, "qwen3_5_text",
      {"model.layers.3.linear_attn.in_proj_qkv.weight", "model.layers.2.self_attn.q_proj.weight"});
}

// A recurrent model: a failed step may leave states half-updated, and states cannot be cut back.
TEST(Qwen3_5, StateIsRecurrent) {
  ModelUnderTest m(fixture_dir(kName));
  EXPECT_FALSE(m.model().state_survives_failed_step());
  EXPECT_FALSE(m.model().can_truncate_states());
}

// The published layout: top-level model_type qwen3_5 with the text settings under text_config, the text
// weights under model.language_model.*, a vision tower beside them. keel serves the text model (saying so
// once in the log) and gives the qwen3_5 reference's log-probs — bit for bit what the text-only folder gives,
// as the weights are the same.
TEST(Qwen3_5, MultimodalFolderMatchesTextReference) {
  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  std::unique_ptr<ModelUnderTest> mm;
  try {
    mm = std::make_unique<ModelUnderTest>(fixture_dir("qwen3_5_multimodal"));
  } catch (...) {
    spdlog::set_default_logger(previous);
    throw;
  }
  spdlog::set_default_logger(previous);
  EXPECT_NE(log.str().find("ignoring its vision tower"), std::string::npos) << log.str();
  EXPECT_TRUE(mm->loaded.config.nested_text_config);
  EXPECT_EQ(mm->model().model_type(), "qwen3_5");
  EXPECT_TRUE(mm->loaded.weights->has("model.layers.0.linear_attn.in_proj_qkv.weight"));

  Reference ref(kName);
  const std::vector<int32_t> ids = ref.ids("prompt_ids"), want_argmax = ref.ids("argmax");
  const std::vector<double> want = ref.f("logprobs");
  const int64_t T = static_cast<int64_t>(ids.size()), V = mm->model().vocab_size();
  const std::vector<double> got = prefill_logprobs(mm->model(), ids, T);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-3);
  for (int64_t t = 0; t < T; ++t) EXPECT_EQ(argmax_row(got, t, V), want_argmax[static_cast<size_t>(t)]) << t;
  ModelUnderTest text(fixture_dir(kName));
  EXPECT_EQ(prefill_logprobs(text.model(), ids, T), got);
}

}  // namespace
}  // namespace keel::testing
