// `keel quantize` (in-process) against tools/mlx_convert.py quantize, the Python oracle written from MLX's
// and mlx-lm's source (docs/MLX.md): for every fixture family and several widths, the same tensor names,
// dtypes, shapes and bytes (packed words, scales and biases bit for bit; mlx-lm's names and layouts), the
// same config.json (the quantization block and its copy included), safetensors metadata {"format": "mlx"};
// with a small shard limit, model-0000i-of-0000N shards no larger than the limit, an index naming each
// tensor's shard, and a folder that runs to the same log-probs as the one-shard folder. mlx-lm's mixed
// recipes
// (--recipe): the same against the oracle, the widths mlx-lm's rule gives (derived here by hand from
// mlx_lm/convert.py mixed_quant_predicate_builder), and folders that run to their dequantized weights'
// log-probs (tools/mlx_convert.py dequantize, computed in Python).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../fixtures/model_fixtures.h"
#include "cli/commands.h"
#include "load/safetensors.h"
#include "model_test_util.h"

namespace keel::testing {
namespace {

void keel_quantize(std::vector<std::string> args) {
  CLI::App app;
  cli::add_quantize_command(app);
  args.insert(args.begin(), "quantize");
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  ::testing::internal::CaptureStdout();
  try {
    app.parse(args);
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  ::testing::internal::GetCapturedStdout();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void expect_same_folders(const std::string& want_dir, const std::string& got_dir) {
  WeightStore want = WeightStore::open(want_dir), got = WeightStore::open(got_dir);
  EXPECT_EQ(got.names(), want.names());
  for (const std::string& n : want.names()) {
    if (!got.has(n)) continue;
    const Tensor a = want.get(n), b = got.get(n);
    ASSERT_EQ(b.dtype(), a.dtype()) << n;
    ASSERT_EQ(b.shape_string(), a.shape_string()) << n;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())), 0) << n << " differs";
  }
  EXPECT_EQ(read_json(got_dir + "/config.json"), read_json(want_dir + "/config.json"));
  for (const auto& shard : got.shards()) {
    auto it = shard->header().metadata.find("format");
    ASSERT_NE(it, shard->header().metadata.end()) << shard->path();
    EXPECT_EQ(it->second, "mlx");
  }
}

TEST(MlxQuantize, EqualsThePythonOracleForEveryFamily) {
  struct Width {
    int bits, group;
    const char* keep;
    const char* recipe = nullptr;
  };
  // With a recipe, --bits is only the block's top-level bits (8 and 2 here: mlx-lm writes what it is given).
  const Width widths[] = {{4, 64, nullptr},
                          {3, 32, "layers\\.1\\."},
                          {8, 128, nullptr},
                          {2, 32, nullptr},
                          {5, 64, nullptr},
                          {6, 32, nullptr},
                          {4, 64, nullptr, "mixed_3_6"},
                          {4, 32, nullptr, "mixed_3_6"},
                          {8, 32, nullptr, "mixed_2_6"},
                          {4, 64, "layers\\.1\\.", "mixed_3_4"},
                          {2, 32, nullptr, "mixed_4_6"}};
  for (const std::string& name : model_fixture_names())
    for (const Width& w : widths) {
      SCOPED_TRACE(fmt::format("{} {}-bit group {}{}{}", name, w.bits, w.group, w.keep ? " --keep" : "",
                               w.recipe ? std::string(" --recipe ") + w.recipe : std::string()));
      TempDir dir;
      const std::string py = dir.path() + "/py", kq = dir.path() + "/keel";
      std::string cmd =
          fmt::format("python3 {}/tools/mlx_convert.py quantize --src {} --out {} --bits {} --group-size {}",
                      KEEL_SOURCE_DIR, fixture_dir(name), py, w.bits, w.group);
      std::vector<std::string> args = {
          "-m",     fixture_dir(name),      "-o",           kq,
          "--bits", std::to_string(w.bits), "--group-size", std::to_string(w.group)};
      if (w.keep) {
        cmd += fmt::format(" --keep '{}'", w.keep);
        args.insert(args.end(), {"--keep", w.keep});
      }
      if (w.recipe) {
        cmd += fmt::format(" --recipe {}", w.recipe);
        args.insert(args.end(), {"--recipe", w.recipe});
      }
      ASSERT_EQ(std::system((cmd + " > /dev/null").c_str()), 0) << cmd;
      keel_quantize(args);
      expect_same_folders(py, kq);
    }
}

// The widths mlx-lm's rule gives, worked out by hand from mlx_lm/convert.py mixed_quant_predicate_builder
// for the fixtures' layer counts: with n layers a layer is "more bits" when index < n/8, index >= 7n/8 or
// (index − n/8) mod 3 = 2 — for n = 4 layers 2 and 3, for n = 8 (nemotron_h) layers 0, 3, 6 and 7.
TEST(MlxQuantize, RecipesGiveTheHighBitsWhereMlxLmDoes) {
  struct Case {
    const char* family;
    std::vector<std::string> high;  // every other quantized module is at the low bits
  };
  const Case cases[] = {
      {"llama",
       {"lm_head", "model.layers.2.mlp.down_proj", "model.layers.2.self_attn.v_proj",
        "model.layers.3.mlp.down_proj", "model.layers.3.self_attn.v_proj"}},
      // Tied: no lm_head, the embedding is an ordinary (low-bit) module.
      {"qwen3",
       {"model.layers.2.mlp.down_proj", "model.layers.2.self_attn.v_proj", "model.layers.3.mlp.down_proj",
        "model.layers.3.self_attn.v_proj"}},
      // Layer 1's v_proj and layer 4's down_proj are not "more bits"; switch_mlp.fc2 holds no "down_proj";
      // the shared experts' down_proj (input 48) is not a multiple of 32, so it stays float.
      {"nemotron_h", {"lm_head", "backbone.layers.6.mixer.v_proj"}},
      // The router and the shared-expert gate are low-bit too: the recipe replaces the model's predicate.
      {"qwen3_5_moe",
       {"language_model.lm_head", "language_model.model.layers.2.mlp.switch_mlp.down_proj",
        "language_model.model.layers.2.self_attn.v_proj",
        "language_model.model.layers.3.mlp.switch_mlp.down_proj"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.family);
    TempDir dir;
    const std::string q = dir.path() + "/q";
    keel_quantize(
        {"-m", fixture_dir(c.family), "-o", q, "--bits", "5", "--group-size", "32", "--recipe", "mixed_3_6"});
    const nlohmann::json block = read_json(q + "/config.json")["quantization"];
    EXPECT_EQ(block["bits"], 5);
    EXPECT_EQ(block["group_size"], 32);
    WeightStore store = WeightStore::open(q);
    int n_high = 0, n_low = 0;
    for (const std::string& n : store.names()) {
      if (!n.ends_with(".scales")) continue;
      const std::string mod = n.substr(0, n.size() - 7);
      const bool high = std::find(c.high.begin(), c.high.end(), mod) != c.high.end();
      ASSERT_TRUE(block.contains(mod)) << mod << " has no entry";
      EXPECT_EQ(block[mod], (nlohmann::json{{"group_size", 32}, {"bits", high ? 6 : 3}, {"mode", "affine"}}))
          << mod;
      // The stored words have the entry's width: K·bits/32 words a row.
      EXPECT_EQ(store.get(mod + ".weight").dim(-1) * 32 / (high ? 6 : 3), store.get(n).dim(-1) * 32) << mod;
      (high ? n_high : n_low)++;
    }
    EXPECT_EQ(n_high, static_cast<int>(c.high.size()));
    EXPECT_GT(n_low, 10);
  }
}

// A recipe folder is a model keel runs: its log-probs (prefill, and one token a step: the packed GEMV) equal
// those of its dequantized weights (w = scale·q + bias computed by tools/mlx_convert.py dequantize) within
// the CPU bar, for every family and two recipes.
TEST(MlxQuantize, RecipeFoldersRunLikeTheirDequantizedWeights) {
  for (const std::string& name : model_fixture_names())
    for (const auto& [recipe, group] : {std::pair<const char*, int>{"mixed_3_6", 32}, {"mixed_2_6", 64}}) {
      SCOPED_TRACE(fmt::format("{} {} group {}", name, recipe, group));
      TempDir dir;
      const std::string q = dir.path() + "/q", hf = dir.path() + "/hf";
      keel_quantize(
          {"-m", fixture_dir(name), "-o", q, "--group-size", std::to_string(group), "--recipe", recipe});
      const std::string cmd = fmt::format(
          "python3 {}/tools/mlx_convert.py dequantize --src {} --out {} > /dev/null", KEEL_SOURCE_DIR, q, hf);
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      Reference ref(name);
      const std::vector<int32_t> ids = ref.ids("prompt_ids");
      const int64_t T = static_cast<int64_t>(ids.size());
      ModelUnderTest packed(q), dense(hf);
      EXPECT_LT(packed.loaded.weights->total_bytes(), dense.loaded.weights->total_bytes() / 2);
      for (int64_t chunk : {T, int64_t{1}}) {
        const std::vector<double> got = prefill_logprobs(packed.model(), ids, chunk),
                                  want = prefill_logprobs(dense.model(), ids, chunk);
        ASSERT_EQ(got.size(), want.size());
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
        EXPECT_LE(worst, 1e-3) << "chunk " << chunk << ": max |Δ log-prob| vs the dequantized weights";
        std::printf("%s %s g%d chunk %lld: max |Δ log-prob| vs dequantized %.2e\n", name.c_str(), recipe,
                    group, static_cast<long long>(chunk), worst);
      }
    }
}

TEST(MlxQuantize, RefusesAnUnknownRecipeNamingTheValidOnes) {
  TempDir dir;
  try {
    keel_quantize({"-m", fixture_dir("llama"), "-o", dir.path() + "/q", "--recipe", "mixed_3_5"});
    ADD_FAILURE() << "accepted mixed_3_5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mixed_3_5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/q"));
}

TEST(MlxQuantize, ShardsAndIndex) {
  TempDir dir;
  const std::string one = dir.path() + "/one", many = dir.path() + "/many";
  keel_quantize({"-m", fixture_dir("qwen3_5_moe"), "-o", one, "--bits", "4"});
  const int64_t limit = 60000;
  keel_quantize({"-m", fixture_dir("qwen3_5_moe"), "-o", many, "--bits", "4", "--max-shard-bytes",
                 std::to_string(limit)});
  const nlohmann::json index = read_json(many + "/model.safetensors.index.json");
  WeightStore store = WeightStore::open(many);
  const size_t n = store.shards().size();
  ASSERT_GT(n, 2u);
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n);
    SafetensorsFile shard(many + "/" + file);
    int64_t bytes = 0;
    for (const TensorRecord& t : shard.header().tensors) {
      EXPECT_EQ(index["weight_map"][t.name], file) << t.name;
      bytes += t.nbytes;
    }
    EXPECT_TRUE(bytes <= limit || shard.header().tensors.size() == 1) << file << " holds " << bytes;
    total += bytes;
  }
  EXPECT_EQ(index["metadata"]["total_size"], total);
  EXPECT_EQ(index["weight_map"].size(), store.size());
  // The sharded folder is the same model.
  Reference ref("qwen3_5_moe");
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  ModelUnderTest a(one), b(many);
  const int64_t T = static_cast<int64_t>(ids.size());
  EXPECT_EQ(prefill_logprobs(a.model(), ids, T), prefill_logprobs(b.model(), ids, T));
}

TEST(MlxQuantize, RefusesAQuantizedFolderAndAnOccupiedOutput) {
  TempDir dir;
  const std::string q = dir.path() + "/q";
  keel_quantize({"-m", fixture_dir("llama"), "-o", q, "--bits", "4"});
  try {
    keel_quantize({"-m", q, "-o", dir.path() + "/qq", "--bits", "4"});
    ADD_FAILURE() << "requantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already quantized"), std::string::npos) << e.what();
  }
  try {
    keel_quantize({"-m", fixture_dir("llama"), "-o", q, "--bits", "4"});
    ADD_FAILURE() << "wrote over a model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already holds a model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace keel::testing
