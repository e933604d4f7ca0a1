// llama against transformers 5.17 (tests/fixtures/llama: 4 layers, GQA 4/2, head_dim 16, rope_theta 5e5,
// untied lm_head, vocab 512 padded past the tokenizer's 384).
#include <cmath>

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
  // Bitwise (tolerance 0): attention walks key tiles at fixed absolute boundaries; the rest is per row.
  check_chunked_prefill(kName, ops::kAttentionKeyTile, 0);
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

// An MLX-quantized folder: every 2-D matrix (projections, the embedding, lm_head) as 4-bit words + f32 scales
// and biases per group of 32 (weight u32 [rows, cols/8], element c in bits [4c, 4c + 4) of its row),
// quantized here from the fixture. It binds as packed Weights; the CPU backend's packed kernels and the
// reference backend each give the log-probs of the same model whose dequantized values are stored dense
// (f32) on that backend, and not the unquantized model's (the packed values really are used).
TEST(Llama, PackedWeightsBindAndRunOnCpuAndReferenceBackends) {
  const std::string src = fixture_dir(kName);
  WeightStore store = WeightStore::open(src);
  SafetensorsBuilder packed, dense;
  auto bytes = [](const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); };
  int64_t n_packed = 0;
  for (const std::string& n : store.names()) {
    const Tensor t = store.get(n);
    const std::vector<int64_t> shape(t.shape().begin(), t.shape().begin() + t.ndim());
    const std::string raw = bytes(t.data(), static_cast<size_t>(t.nbytes()));
    ASSERT_EQ(t.dtype(), DType::bf16) << n;
    if (t.ndim() != 2 || !n.ends_with(".weight") || t.dim(1) % 32 != 0) {
      packed.add(n, "BF16", shape, raw);
      dense.add(n, "BF16", shape, raw);
      continue;
    }
    const int64_t rows = t.dim(0), cols = t.dim(1), g = 32, groups = cols / g;
    std::vector<uint32_t> words(static_cast<size_t>(rows * cols / 8), 0);
    std::vector<float> scales(static_cast<size_t>(rows * groups)), biases(scales.size()),
        deq(static_cast<size_t>(rows * cols));
    const auto* w = t.ptr<const uint16_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < groups; ++k) {
        float lo = INFINITY, hi = -INFINITY;
        for (int64_t c = k * g; c < (k + 1) * g; ++c)
          lo = std::min(lo, bf16_to_f32(w[r * cols + c])), hi = std::max(hi, bf16_to_f32(w[r * cols + c]));
        const float scale = hi > lo ? (hi - lo) / 15.0f : 1.0f;
        scales[static_cast<size_t>(r * groups + k)] = scale, biases[static_cast<size_t>(r * groups + k)] = lo;
        for (int64_t c = k * g; c < (k + 1) * g; ++c) {
          const double q = std::clamp(std::round((bf16_to_f32(w[r * cols + c]) - lo) / scale), 0.0f, 15.0f);
          words[static_cast<size_t>((r * cols + c) / 8)] |= static_cast<uint32_t>(q) << (4 * (c % 8));
          deq[static_cast<size_t>(r * cols + c)] = static_cast<float>(double(scale) * q + double(lo));
        }
      }
    const std::string base = n.substr(0, n.size() - 7);
    packed.add(n, "U32", {rows, cols / 8}, bytes(words.data(), words.size() * 4));
    packed.add(base + ".scales", "F32", {rows, groups}, bytes(scales.data(), scales.size() * 4));
    packed.add(base + ".biases", "F32", {rows, groups}, bytes(biases.data(), biases.size() * 4));
    dense.add(n, "F32", shape, bytes(deq.data(), deq.size() * 4));
    ++n_packed;
  }
  ASSERT_GE(n_packed, 4 * 7 + 2);  // every layer's 7 projections, the embedding and lm_head
  TempDir pdir, ddir;
  write_file(pdir.path() + "/model.safetensors", packed.build());
  write_file(ddir.path() + "/model.safetensors", dense.build());
  std::filesystem::copy_file(src + "/config.json", pdir.path() + "/config.json");
  std::filesystem::copy_file(src + "/config.json", ddir.path() + "/config.json");

  Reference ref(kName);
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const int64_t T = static_cast<int64_t>(ids.size());
  {  // the CPU's packed kernels: the same model as its dequantized-dense copy on the CPU
    ModelUnderTest cp(pdir.path()), cd(ddir.path());
    const std::vector<double> got = prefill_logprobs(cp.model(), ids, T),
                              want = prefill_logprobs(cd.model(), ids, T);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    std::printf("llama 4-bit on the CPU: max |Δ log-prob| packed vs dequantized-dense %.3e\n", worst);
    EXPECT_LE(worst, 1e-4);
  }
  ModelUnderTest p(pdir.path(), 2, TestBackend::reference), d(ddir.path(), 2, TestBackend::reference);
  EXPECT_LT(p.loaded.weights->total_bytes(), d.loaded.weights->total_bytes() / 4);
  const std::vector<double> got = prefill_logprobs(p.model(), ids, T),
                            want = prefill_logprobs(d.model(), ids, T);
  const std::vector<double> unquantized = ref.f("logprobs");
  double worst = 0, moved = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    moved = std::max(moved, std::abs(got[i] - unquantized[i]));
  }
  std::printf("llama 4-bit: max |Δ log-prob| packed vs dequantized-dense %.3e; vs unquantized %.3e\n", worst,
              moved);
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(moved, 1e-3);
}

}  // namespace
}  // namespace keel::testing
