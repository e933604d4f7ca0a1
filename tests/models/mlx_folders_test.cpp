// MLX-format folders of every fixture family against the dequantized weights, an oracle keel does not
// compute: tools/mlx_test_folders.py (through tools/mlx_convert.py: mlx-lm's names and layouts — backbone.
// and switch_mlp.fc1/fc2 for nemotron_h, language_model. prefixes, stored 1 + w norms and switch_mlp stacks
// for Qwen3.5, conv1d [C, K, 1] —, MLX's config block and MLX's CPU quantizer) writes, for 8, 6, 5, 4, 3, 2
// bits and groups of 64 and 32, an MLX folder with one module at another width (a `quantization` entry) and
// one kept in float (a `false` entry), and the Hugging Face folder of its dequantized weights (w = scale·q +
// bias computed in Python). keel's log-probs on the MLX folder (packed kernels) match keel's on the
// dequantized folder (dense f32) within 1e-3 and greedy generation gives the same tokens. When
// tests/fixtures/<family>/ mlx_reference.safetensors exists (transformers on the dequantized folders), the
// log-probs match it too.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "model_test_util.h"

namespace keel::testing {
namespace {

constexpr double kTol = 1e-3;
constexpr int kGreedySteps = 12;

// Greedy tokens after the prompt, and each step's top-2 log-prob gap.
std::pair<std::vector<int32_t>, std::vector<double>> greedy(Model& model, const std::vector<int32_t>& ids) {
  const int64_t V = model.vocab_size();
  auto state = model.new_state(static_cast<int64_t>(ids.size()) + kGreedySteps);
  StepItem item{state.get(), ids, 1, nullptr};
  Tensor logits = model.forward({&item, 1});
  std::vector<int32_t> toks;
  std::vector<double> gaps;
  for (int s = 0; s < kGreedySteps; ++s) {
    const std::vector<double> lp = log_softmax_rows(logits.ptr<float>(), 1, V);
    std::vector<double> sorted = lp;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    const int32_t tok = static_cast<int32_t>(argmax_row(lp, 0, V));
    toks.push_back(tok), gaps.push_back(sorted[0] - sorted[1]);
    StepItem next{state.get(), std::span<const int32_t>(&toks.back(), 1), 1, nullptr};
    logits = model.forward({&next, 1});
  }
  return {toks, gaps};
}

void check_family(const std::string& family) {
  TempDir dir;
  const std::string cmd = fmt::format("python3 {}/tools/mlx_test_folders.py --family {} --out {} > /dev/null",
                                      KEEL_SOURCE_DIR, family, dir.path());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string ref_path = fixture_dir(family) + "/mlx_reference.safetensors";
  std::optional<WeightStore> oracle;
  if (std::filesystem::exists(ref_path)) oracle.emplace(WeightStore::open_file(ref_path));
  Reference ref(family);
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const int64_t T = static_cast<int64_t>(ids.size());
  for (int bits : {8, 6, 5, 4, 3, 2})
    for (int group : {64, 32}) {
      const std::string tag = fmt::format("b{}_g{}", bits, group);
      SCOPED_TRACE(family + " " + tag);
      ModelUnderTest mlx(dir.path() + "/" + tag + "/mlx"), hf(dir.path() + "/" + tag + "/hf");
      // The packed folder really is packed: under half the f32 twin's bytes (bf16 floats, packed matrices).
      EXPECT_LT(mlx.loaded.weights->total_bytes(), hf.loaded.weights->total_bytes() / 2);
      const std::vector<double> got = prefill_logprobs(mlx.model(), ids, T),
                                want = prefill_logprobs(hf.model(), ids, T);
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      EXPECT_LE(worst, kTol) << "max |Δ log-prob| MLX folder vs its dequantized twin";
      // Decode (one token a step: the packed GEMV path) as well as prefill.
      const auto [g_mlx, gap_mlx] = greedy(mlx.model(), ids);
      const auto [g_hf, gap_hf] = greedy(hf.model(), ids);
      for (int s = 0; s < kGreedySteps; ++s) {
        ASSERT_EQ(g_mlx[s], g_hf[s]) << "greedy step " << s;
        if (gap_hf[s] < 2 * kTol) break;  // a near-tie may go either way from here
      }
      if (oracle && oracle->has("logprobs_" + tag)) {
        Tensor r = oracle->get("logprobs_" + tag);
        ASSERT_EQ(r.numel(), static_cast<int64_t>(got.size()));
        double worst_ref = 0;
        for (int64_t i = 0; i < r.numel(); ++i)
          worst_ref =
              std::max(worst_ref, std::abs(got[static_cast<size_t>(i)] - double(r.ptr<const float>()[i])));
        EXPECT_LE(worst_ref, kTol) << "max |Δ log-prob| vs transformers on the dequantized weights";
      }
      std::printf("%s %s: max |Δ log-prob| vs dequantized %.2e\n", family.c_str(), tag.c_str(), worst);
    }
}

TEST(MlxFolders, Llama) {
  check_family("llama");
}
TEST(MlxFolders, Qwen3) {
  check_family("qwen3");
}
TEST(MlxFolders, NemotronH) {
  check_family("nemotron_h");
}
TEST(MlxFolders, Qwen3_5) {
  check_family("qwen3_5");
}
TEST(MlxFolders, Qwen3_5Moe) {
  check_family("qwen3_5_moe");
}

}  // namespace
}  // namespace keel::testing

namespace keel::testing {
namespace {

// A 4-bit, group-64 qwen3_5_moe MLX folder whose config.json `edit` changes; loading it must fail with `code`
// and a message holding every needle.
void expect_mlx_config_error(const std::function<void(nlohmann::json&)>& edit, ErrorCode code,
                             const std::vector<std::string>& needles) {
  TempDir dir;
  const std::string cmd = fmt::format(
      "python3 {}/tools/mlx_test_folders.py --family qwen3_5_moe --bits 4 --group-size 64 --out {} "
      "> /dev/null",
      KEEL_SOURCE_DIR, dir.path());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string path = dir.path() + "/b4_g64/mlx/config.json";
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(path));
  edit(cfg);
  std::ofstream(path) << cfg.dump();
  expect_load_error(dir.path() + "/b4_g64/mlx", code, needles);
}

// What the config says and what the tensors hold must agree, and the messages name both.
TEST(MlxFolders, LoadErrorsNameTheModuleAndTheConfigEntry) {
  const std::string mod = "language_model.model.layers.0.mlp.shared_expert.up_proj";  // 4-bit in the folder
  const std::string kept = "language_model.model.layers.2.self_attn.q_proj";          // a `false` entry
  // A quantized module (its .scales exist) the config calls float.
  expect_mlx_config_error([&](nlohmann::json& c) { c["quantization"][mod] = false; }, ErrorCode::invalid_file,
                          {"model.layers.0.mlp.shared_expert.up_proj.scales", "is false"});
  // A float module the config quantizes.
  expect_mlx_config_error(
      [&](nlohmann::json& c) {
        c["quantization"][kept] = nlohmann::json{{"bits", 4}, {"group_size", 64}};
      },
      ErrorCode::invalid_file, {"model.layers.2.self_attn.q_proj", "scales is missing"});
  // Default bits that do not fit the stored words.
  expect_mlx_config_error([&](nlohmann::json& c) { c["quantization"]["bits"] = 8; }, ErrorCode::invalid_file,
                          {"8-bit", "config.json quantization", "shape"});
  // Another mode.
  expect_mlx_config_error([&](nlohmann::json& c) { c["quantization"]["mode"] = "mxfp4"; },
                          ErrorCode::unsupported, {"mxfp4", "affine"});
}

}  // namespace
}  // namespace keel::testing
