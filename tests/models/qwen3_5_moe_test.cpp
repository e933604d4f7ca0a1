// qwen3_5_moe against transformers 5.17 (tests/fixtures/qwen3_5_moe: 4 layers DDAD, the qwen3_5 mixers, every
// FFN a MoE of 8 SwiGLU experts, top-3 of a softmax router renormalized, shared expert × sigmoid(gate)).
#include "qwen3_5_test_util.h"

namespace keel::testing {
namespace {

const char* kName = "qwen3_5_moe";
constexpr int64_t kChunk = 64;  // the DeltaNet chunk and the attention key tile
// Bitwise: the models run the recurrent DeltaNet form (token by token at every T), attention walks key tiles
// at fixed absolute boundaries, and matmul, norms and MoE are per row (docs/ARCHITECTURE.md).
constexpr double kChunkTolerance = 0;

TEST(Qwen3_5Moe, DeltaNetBlockMatchesReference) {
  check_deltanet_block(kName, 0);
}
TEST(Qwen3_5Moe, GatedAttentionBlockMatchesReference) {
  check_gated_attention_block(kName, 2);
}
TEST(Qwen3_5Moe, HiddenStatesMatchReference) {
  check_hidden_states(kName);
}
TEST(Qwen3_5Moe, PromptLogprobsMatchReference) {
  check_prompt_logprobs(kName);
}
TEST(Qwen3_5Moe, HiddenStatesMatchReferenceOnReferenceBackend) {
  check_hidden_states(kName, 1e-5, TestBackend::reference);
}
TEST(Qwen3_5Moe, PromptLogprobsMatchReferenceOnReferenceBackend) {
  check_prompt_logprobs(kName, 1e-3, TestBackend::reference);
}
TEST(Qwen3_5Moe, DecodeTeacherForcedMatchesReference) {
  check_decode_teacher_forced(kName);
}
TEST(Qwen3_5Moe, FreeGreedyMatchesReference) {
  check_free_greedy(kName);
}
TEST(Qwen3_5Moe, ChunkedPrefillMatchesOneShot) {
  check_chunked_prefill(kName, kChunk, kChunkTolerance);
}
TEST(Qwen3_5Moe, StateCopyAndTruncate) {
  check_state_copy_and_truncate(kName);
}
TEST(Qwen3_5Moe, BatchInvariant) {
  check_batch_invariance(kName);
}
TEST(Qwen3_5Moe, TransientPlanBoundsMeasuredPeak) {
  check_transient_plan(kName);
}
TEST(Qwen3_5Moe, LoadErrorsNameTheProblem) {
  check_qwen3_5_load_errors(
      kName, "qwen3_5_moe_text",
      {"model.layers.3.mlp.experts.5.gate_proj.weight", "model.layers.1.mlp.shared_expert.up_proj.weight",
       "model.layers.2.mlp.gate.weight"});
}

// Published Qwen3.5 MoE checkpoints fuse the experts: mlp.experts.gate_up_proj [E, 2I, d] (each expert's gate
// rows, then its up rows) and mlp.experts.down_proj [E, d, I]. The fixture's experts rewritten that way give
// the reference's log-probs.
TEST(Qwen3_5Moe, FusedExpertTensorsMatchReference) {
  const std::string src = fixture_dir(kName);
  WeightStore store = WeightStore::open(src);
  const ModelConfig cfg = models::load_model_config(src);
  const int64_t E = cfg.moe.num_experts, I = cfg.moe.moe_intermediate_size, d = cfg.hidden_size;
  auto bytes_of = [&](const std::string& n) {
    Tensor t = store.get(n);
    return std::string(static_cast<const char*>(t.data()), static_cast<size_t>(t.nbytes()));
  };
  SafetensorsBuilder b;
  for (const std::string& n : store.names()) {
    if (n.find(".mlp.experts.") != std::string::npos) continue;
    const Tensor t = store.get(n);
    ASSERT_EQ(t.dtype(), DType::bf16) << n;
    b.add(n, "BF16", std::vector<int64_t>(t.shape().begin(), t.shape().begin() + t.ndim()), bytes_of(n));
  }
  for (int64_t l = 0; l < cfg.num_layers(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
    std::string gate_up, down;
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = p + std::to_string(e) + ".";
      gate_up += bytes_of(x + "gate_proj.weight") + bytes_of(x + "up_proj.weight");
      down += bytes_of(x + "down_proj.weight");
    }
    b.add(p + "gate_up_proj", "BF16", {E, 2 * I, d}, gate_up);
    b.add(p + "down_proj", "BF16", {E, d, I}, down);
  }
  TempDir dir;
  write_file(dir.path() + "/model.safetensors", b.build());
  std::filesystem::copy_file(src + "/config.json", dir.path() + "/config.json");

  Reference ref(kName);
  ModelUnderTest m(dir.path());
  EXPECT_FALSE(m.loaded.weights->has("model.layers.0.mlp.experts.0.up_proj.weight"));
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const std::vector<double> want = ref.f("logprobs");
  const std::vector<double> got = prefill_logprobs(m.model(), ids, static_cast<int64_t>(ids.size()));
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-3);
}

}  // namespace
}  // namespace keel::testing
