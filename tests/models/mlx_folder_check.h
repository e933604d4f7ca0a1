// The MLX-folder check of one fixture family on one backend (tests/models/mlx_folders_test.cpp on the CPU,
// tests/backend/cuda_models_test.cpp on CUDA): tools/mlx_test_folders.py (through tools/mlx_convert.py:
// mlx-lm's names and layouts — backbone. and switch_mlp.fc1/fc2 for nemotron_h, language_model. prefixes,
// stored 1 + w norms and switch_mlp stacks for Qwen3.5, conv1d [C, K, 1] —, MLX's config block and MLX's CPU
// quantizer) writes, for 8, 6, 5, 4, 3, 2 bits and groups of 64 and 32, an MLX folder with one module at
// another width (a `quantization` entry) and one kept in float (a `false` entry), and the Hugging Face folder
// of its dequantized weights (w = scale·q + bias computed in Python). Two oracles keel does not compute:
//  - tests/fixtures/<family>/mlx_reference.safetensors (tools/make_mlx_reference.py: transformers in
//    float64 on the dequantized folders): keel's log-probs on the MLX folder (packed kernels) match its rows
//    (positions 0, 16, 32, … and the last) within 1e-3;
//  - keel's own dense f32 run on the dequantized folder (the same backend): every log-prob within 1e-3 (2e-3
//    on CUDA, where the two paths round differently), and greedy generation gives the same tokens (decode:
//    the packed GEMV path).
#pragma once
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "model_test_util.h"

namespace keel::testing {
namespace mlx_folders {

constexpr double kTol = 1e-3;
constexpr int kGreedySteps = 12;

// Greedy tokens after the prompt, and each step's top-2 log-prob gap.
inline std::pair<std::vector<int32_t>, std::vector<double>> greedy(Model& model,
                                                                   const std::vector<int32_t>& ids) {
  const int64_t V = model.vocab_size();
  auto state = model.new_state(static_cast<int64_t>(ids.size()) + kGreedySteps);
  StepItem item{state.get(), ids, 1, nullptr};
  Tensor logits = model.forward({&item, 1});
  std::vector<int32_t> toks;
  std::vector<double> gaps;
  for (int s = 0; s < kGreedySteps; ++s) {
    std::vector<float> host;  // the logits on any backend
    const std::vector<double> lp = log_softmax_rows(model.host_logits(logits, host).data(), 1, V);
    std::vector<double> sorted = lp;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    const int32_t tok = static_cast<int32_t>(argmax_row(lp, 0, V));
    toks.push_back(tok), gaps.push_back(sorted[0] - sorted[1]);
    StepItem next{state.get(), std::span<const int32_t>(&toks.back(), 1), 1, nullptr};
    logits = model.forward({&next, 1});
  }
  return {toks, gaps};
}

inline void check_family(const std::string& family, TestBackend kind = TestBackend::cpu) {
  TempDir dir;
  const std::string cmd = fmt::format("python3 {}/tools/mlx_test_folders.py --family {} --out {} > /dev/null",
                                      KEEL_SOURCE_DIR, family, dir.path());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string ref_path = fixture_dir(family) + "/mlx_reference.safetensors";
  ASSERT_TRUE(std::filesystem::exists(ref_path)) << ref_path << ": run tools/make_mlx_reference.py";
  const WeightStore oracle = WeightStore::open_file(ref_path);
  Reference ref(family);
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const int64_t T = static_cast<int64_t>(ids.size());
  for (int bits : {8, 6, 5, 4, 3, 2})
    for (int group : {64, 32}) {
      const std::string tag = fmt::format("b{}_g{}", bits, group);
      SCOPED_TRACE(family + " " + tag);
      ModelUnderTest mlx(dir.path() + "/" + tag + "/mlx", 2, kind),
          hf(dir.path() + "/" + tag + "/hf", 2, kind);
      // The packed folder really is packed: under half the f32 twin's bytes (bf16 floats, packed matrices).
      EXPECT_LT(mlx.loaded.weights->total_bytes(), hf.loaded.weights->total_bytes() / 2);
      const std::vector<double> got = prefill_logprobs(mlx.model(), ids, T),
                                want = prefill_logprobs(hf.model(), ids, T);
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      // The twin is keel too: on the CPU both runs are the same f32 products (measured 0); on CUDA the packed
      // tiles and the dense f32 path round differently, each within kTol of the float64 oracle (checked
      // below at its positions), so two of them may sit up to 2·kTol apart (1.35e-3 measured, qwen3_5 2-bit).
      EXPECT_LE(worst, kind == TestBackend::cuda ? 2 * kTol : kTol)
          << "max |Δ log-prob| MLX folder vs its dequantized twin";
      // Decode (one token a step: the packed GEMV path) as well as prefill.
      const auto [g_mlx, gap_mlx] = greedy(mlx.model(), ids);
      const auto [g_hf, gap_hf] = greedy(hf.model(), ids);
      for (int s = 0; s < kGreedySteps; ++s) {
        ASSERT_EQ(g_mlx[s], g_hf[s]) << "greedy step " << s;
        if (gap_hf[s] < 2 * kTol) break;  // a near-tie may go either way from here
      }
      {
        ASSERT_TRUE(oracle.has("logprobs_" + tag)) << ref_path << " lacks logprobs_" << tag;
        const Tensor pos = oracle.get("positions"), r = oracle.get("logprobs_" + tag);
        const int64_t V = mlx.model().vocab_size(), P = pos.numel();
        ASSERT_EQ(r.numel(), P * V);
        double worst_ref = 0;
        for (int64_t p = 0; p < P; ++p) {
          const int64_t t = pos.ptr<const int64_t>()[p];
          ASSERT_LT(t, T);
          for (int64_t v = 0; v < V; ++v)
            worst_ref = std::max(worst_ref, std::abs(got[static_cast<size_t>(t * V + v)] -
                                                     double(r.ptr<const float>()[p * V + v])));
        }
        EXPECT_LE(worst_ref, kTol) << "max |Δ log-prob| vs transformers on the dequantized weights";
        std::printf("%s %s: max |Δ log-prob| vs transformers on the dequantized weights %.2e\n",
                    family.c_str(), tag.c_str(), worst_ref);
      }
      std::printf("%s %s: max |Δ log-prob| vs dequantized %.2e\n", family.c_str(), tag.c_str(), worst);
    }
}

}  // namespace mlx_folders
}  // namespace keel::testing
