// MLX-format folders of every fixture family on the CPU: tests/models/mlx_folder_check.h says what is checked
// against which oracle (tests/backend/cuda_models_test.cpp runs the same check on CUDA).
#include "mlx_folder_check.h"

namespace keel::testing {
namespace {

using mlx_folders::check_family;

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
