// `keel inspect` driven in-process on folders written here (config.json text + a safetensors file whose
// parameter count and bytes the test sums plainly), and on every model fixture (tests/fixtures/models.txt):
// there the oracle is the parameter count and layer kinds transformers recorded in reference.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../fixtures/model_fixtures.h"
#include "cli/commands.h"
#include "core/error.h"
#include "test_files.h"

using namespace keel;
using namespace keel::testing;

namespace {

// Runs `keel inspect ARGS...` in-process and returns what it printed.
std::string run_inspect(std::vector<std::string> args) {
  CLI::App app;
  cli::add_inspect_command(app);
  args.insert(args.begin(), "inspect");
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    app.parse(args);
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

// A tiny Nemotron-H: M * - E, with a handful of tensors (the shapes need not be a full model's for counting).
void write_tiny_nemotron(const TempDir& dir) {
  write_file(dir.file("config.json"), R"({"model_type": "nemotron_h", "vocab_size": 64, "hidden_size": 16,
    "hybrid_override_pattern": "M*-E", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 8, "n_groups": 2, "ssm_state_size": 16,
    "conv_kernel": 4, "intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 8, "time_step_limit": [0.0, Infinity], "max_position_embeddings": 1024})");
  std::vector<uint16_t> embed(64 * 16, 0x3f80);
  std::vector<float> a_log(4, 0.5f);
  std::vector<uint16_t> up(4 * 8 * 16, 0);
  write_file(dir.file("model.safetensors"),
             SafetensorsBuilder()
                 .add("backbone.embeddings.weight", "BF16", {64, 16}, bytes_of(embed))
                 .add("backbone.layers.0.mixer.A_log", "F32", {4}, bytes_of(a_log))
                 .add("backbone.layers.3.mixer.experts.up_proj", "BF16", {4, 8, 16}, bytes_of(up))
                 .build());
}

}  // namespace

TEST(Inspect, JsonReportForATinyNemotronH) {
  TempDir dir;
  write_tiny_nemotron(dir);
  nlohmann::json r = nlohmann::json::parse(run_inspect({"-m", dir.path(), "--json", "--ctx", "100"}));
  EXPECT_EQ(r["model_type"], "nemotron_h");
  EXPECT_EQ(r["layers"], (nlohmann::json{"mamba2", "attention", "mlp", "moe"}));
  EXPECT_EQ(r["parameters"], 64 * 16 + 4 + 4 * 8 * 16);
  EXPECT_EQ(r["weight_bytes"], (64 * 16 + 4 * 8 * 16) * 2 + 4 * 4);
  EXPECT_EQ(r["weight_bytes_by_dtype"]["bf16"], (64 * 16 + 4 * 8 * 16) * 2);
  EXPECT_EQ(r["weight_bytes_by_dtype"]["f32"], 16);
  // One Mamba2 layer: SSM H·P·N·4 = 4·8·16·4 = 2048; conv (K−1)·(H·P + 2·G·N)·4 = 3·(32 + 64)·4 = 1152.
  EXPECT_EQ(r["state_bytes_per_sequence"], 2048 + 1152);
  // One attention layer: 2·n_kv·head_dim·4 = 2·2·8·4 = 128 bytes per token.
  EXPECT_EQ(r["kv_bytes_per_token"], 128);
  EXPECT_EQ(r["ctx"], 100);
  EXPECT_EQ(r["state_bytes_at_ctx"], 2048 + 1152 + 100 * 128);
  EXPECT_TRUE(r["step_workspace_bytes"].is_null());
}

// An MLX-quantized folder: the packed modules' bytes (u32 words + bf16 scales + biases) summed here, the
// config's block as written.
TEST(Inspect, MlxQuantizedFolderCountsPackedBytes) {
  TempDir dir;
  write_file(dir.file("config.json"), R"({"model_type": "nemotron_h", "vocab_size": 64, "hidden_size": 32,
    "hybrid_override_pattern": "M*-E", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 8, "n_groups": 2, "ssm_state_size": 16,
    "conv_kernel": 4, "intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 8, "max_position_embeddings": 1024,
    "quantization": {"group_size": 32, "bits": 4, "backbone.layers.3.mixer.switch_mlp.fc1": {"group_size": 32,
      "bits": 8}, "backbone.layers.1.mixer.q_proj": false}})");
  std::vector<uint32_t> embed(64 * 4, 0x12345678u), fc1(4 * 8 * 8, 0x01020304u);
  std::vector<uint16_t> embed_s(64, 0x3f80), fc1_s(4 * 8, 0x3f80);
  std::vector<float> a_log(4, 0.5f);
  write_file(dir.file("model.safetensors"),
             SafetensorsBuilder()
                 .add("backbone.embeddings.weight", "U32", {64, 4}, bytes_of(embed))
                 .add("backbone.embeddings.scales", "BF16", {64, 1}, bytes_of(embed_s))
                 .add("backbone.embeddings.biases", "BF16", {64, 1}, bytes_of(embed_s))
                 .add("backbone.layers.0.mixer.A_log", "F32", {4}, bytes_of(a_log))
                 .add("backbone.layers.3.mixer.switch_mlp.fc1.weight", "U32", {4, 8, 8}, bytes_of(fc1))
                 .add("backbone.layers.3.mixer.switch_mlp.fc1.scales", "BF16", {4, 8, 1}, bytes_of(fc1_s))
                 .add("backbone.layers.3.mixer.switch_mlp.fc1.biases", "BF16", {4, 8, 1}, bytes_of(fc1_s))
                 .build());
  nlohmann::json r = nlohmann::json::parse(run_inspect({"-m", dir.path(), "--json"}));
  const int64_t packed = 64 * 4 * 4 + 2 * 64 * 2 + 4 * 8 * 8 * 4 + 2 * 4 * 8 * 2;
  EXPECT_EQ(r["weight_bytes"], packed + 16);
  EXPECT_EQ(r["weight_bytes_by_dtype"]["u32"], 64 * 4 * 4 + 4 * 8 * 8 * 4);
  ASSERT_TRUE(r["quantization"].is_object()) << r.dump();
  EXPECT_EQ(r["quantization"]["bits"], 4);
  EXPECT_EQ(r["quantization"]["group_size"], 32);
  EXPECT_EQ(r["quantization"]["packed_modules"], 2);
  EXPECT_EQ(r["quantization"]["module_entries"], 2);
  EXPECT_EQ(r["quantization"]["module_overrides"], 1);
  EXPECT_EQ(r["quantization"]["packed_bytes"], packed);
  const std::string text = run_inspect({"-m", dir.path()});
  EXPECT_NE(text.find("MLX affine     4-bit, group 32; 2 packed modules"), std::string::npos) << text;
  // An unquantized folder says so.
  TempDir plain;
  write_tiny_nemotron(plain);
  EXPECT_TRUE(nlohmann::json::parse(run_inspect({"-m", plain.path(), "--json"}))["quantization"].is_null());
}

TEST(Inspect, TextReport) {
  TempDir dir;
  write_tiny_nemotron(dir);
  std::string text = run_inspect({"-m", dir.path(), "--chunk", "512"});
  EXPECT_NE(text.find("nemotron_h"), std::string::npos) << text;
  EXPECT_NE(text.find("parameters     1540"), std::string::npos) << text;
  EXPECT_NE(text.find("3  moe"), std::string::npos) << text;
  EXPECT_NE(text.find("state at 1024 tokens"), std::string::npos)
      << text;  // default: max_position_embeddings
  EXPECT_NE(text.find("--chunk 512: n/a ("), std::string::npos)
      << text;  // the tiny folder's weights are partial
}

TEST(Inspect, ErrorsNameTheFolder) {
  TempDir dir;
  try {
    run_inspect({"-m", dir.path()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("config.json")), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_inspect({"-m", dir.path(), "--ctx", "-5"}), CLI::ValidationError);
  EXPECT_THROW(run_inspect({"--json"}), CLI::RequiredError);
}

// The fixtures another engineer generates with transformers (tools/make_reference.py): reference.json records
// "parameters" (sum of numel in model.safetensors) and "layer_kinds" ("mamba2", "deltanet+moe", ...).
TEST(Inspect, MatchesTheReferenceFixtures) {
  namespace fs = std::filesystem;
  // Every model fixture, and the published multimodal layout (whose layer kinds are not recorded).
  std::vector<std::string> names = model_fixture_names();
  names.push_back("qwen3_5_multimodal");
  for (const std::string& name : names) {
    const std::string dir = model_fixture_path(name);
    SCOPED_TRACE(dir);
    std::ifstream ref(dir + "/reference.json");
    ASSERT_TRUE(ref) << "no reference.json in " << dir;
    nlohmann::json meta = nlohmann::json::parse(ref);
    ASSERT_TRUE(meta.contains("parameters"));
    nlohmann::json r = nlohmann::json::parse(run_inspect({"-m", dir, "--json"}));
    EXPECT_EQ(r["model_type"], name == "qwen3_5_multimodal" ? "qwen3_5" : name);
    EXPECT_EQ(r["parameters"], meta["parameters"]);
    ASSERT_EQ(meta.contains("layer_kinds"), name != "qwen3_5_multimodal");
    if (meta.contains("layer_kinds")) {
      nlohmann::json expect = nlohmann::json::array(), expect_ffn = nlohmann::json::array();
      for (const auto& k : meta["layer_kinds"]) {
        std::string s = k.get<std::string>();
        size_t plus = s.find('+');
        std::string mixer = s.substr(0, plus);
        expect.push_back(mixer == "deltanet" ? "gated_deltanet" : mixer);
        expect_ffn.push_back(plus == std::string::npos ? nlohmann::json()
                                                       : nlohmann::json(s.substr(plus + 1)));
      }
      EXPECT_EQ(r["layers"], expect);
      EXPECT_EQ(r["ffn"], expect_ffn);
    }
  }
}
