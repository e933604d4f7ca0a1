// llama against transformers 5.17 (tests/fixtures/llama: 4 layers, GQA 4/2, head_dim 16, rope_theta 5e5,
// untied lm_head, vocab 512 padded past the tokenizer's 384).
#include "model_test_util.h"
#include "ops/attention.h"

namespace keel::testing {
namespace {

const char* kName = "llama";

TEST(Llama, HiddenStatesMatchReference) {
  check_hidden_states(kName);
}
TEST(Llama, PromptLogprobsMatchReference) {
  check_prompt_logprobs(kName);
}
TEST(Llama, HiddenStatesMatchReferenceOnReferenceBackend) {
  check_hidden_states(kName, 1e-5, TestBackend::reference);
}
TEST(Llama, PromptLogprobsMatchReferenceOnReferenceBackend) {
  check_prompt_logprobs(kName, 1e-3, TestBackend::reference);
}
TEST(Llama, DecodeTeacherForcedMatchesReference) {
  check_decode_teacher_forced(kName);
}
TEST(Llama, FreeGreedyMatchesReference) {
  check_free_greedy(kName);
}
TEST(Llama, ChunkedPrefillMatchesOneShot) {
  check_chunked_prefill(kName, ops::kAttentionKeyTile);
}
TEST(Llama, StateCopyAndTruncate) {
  check_state_copy_and_truncate(kName);
}
TEST(Llama, CancelledStepThrows) {
  check_cancellation(kName);
}
TEST(Llama, BatchInvariant) {
  check_batch_invariance(kName);
}
TEST(Llama, TransientPlanBoundsMeasuredPeak) {
  check_transient_plan(kName);
}
TEST(Llama, LoadErrorsNameTheProblem) {
  check_load_errors(kName, "model.layers.2.self_attn.k_proj.weight");
}

}  // namespace
}  // namespace keel::testing
