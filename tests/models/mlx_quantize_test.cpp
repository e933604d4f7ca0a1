// `keel quantize` (in-process) against tools/mlx_convert.py quantize, the Python oracle written from MLX's
// and mlx-lm's source (docs/MLX.md): for every fixture family and several widths, the same tensor names,
// dtypes, shapes and bytes (packed words, scales and biases bit for bit; mlx-lm's names and layouts), the
// same config.json (the quantization block and its copy included), safetensors metadata {"format": "mlx"};
// with a small shard limit, model-0000i-of-0000N shards no larger than the limit, an index naming each
// tensor's shard, and a folder that runs to the same log-probs as the one-shard folder.
#include <cstdlib>
#include <cstring>
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
  };
  const Width widths[] = {{4, 64, nullptr}, {3, 32, "layers\\.1\\."}, {8, 128, nullptr},
                          {2, 32, nullptr}, {5, 64, nullptr},         {6, 32, nullptr}};
  for (const std::string& name : model_fixture_names())
    for (const Width& w : widths) {
      SCOPED_TRACE(fmt::format("{} {}-bit group {}{}", name, w.bits, w.group, w.keep ? " --keep" : ""));
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
      ASSERT_EQ(std::system((cmd + " > /dev/null").c_str()), 0) << cmd;
      keel_quantize(args);
      expect_same_folders(py, kq);
    }
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
