// WeightStore over folders the test writes: single file, sharded with an index, and broken indexes. Values
// read back are compared with the values written.
#include "load/weight_store.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "test_files.h"

using namespace keel;
using namespace keel::testing;

namespace {

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error thrown";
}

std::string f32_file(const std::vector<std::pair<std::string, std::vector<float>>>& tensors) {
  SafetensorsBuilder b;
  for (const auto& [name, values] : tensors)
    b.add(name, "F32", {static_cast<int64_t>(values.size())}, bytes_of(values));
  return b.build();
}

// Two shards: embed + layer 0 in the first, layer 1 + lm_head in the second.
void write_sharded(const TempDir& dir, const std::string& index) {
  write_file(dir.file("model-00001-of-00002.safetensors"),
             f32_file({{"model.embed_tokens.weight", {1, 2, 3, 4}}, {"model.layers.0.w", {5, 6}}}));
  write_file(dir.file("model-00002-of-00002.safetensors"),
             f32_file({{"model.layers.1.w", {7, 8}}, {"lm_head.weight", {9, 10, 11, 12}}}));
  write_file(dir.file("model.safetensors.index.json"), index);
}

const char* kIndex = R"({"metadata": {"total_size": 48}, "weight_map": {
  "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
  "model.layers.0.w": "model-00001-of-00002.safetensors",
  "model.layers.1.w": "model-00002-of-00002.safetensors",
  "lm_head.weight": "model-00002-of-00002.safetensors"}})";

}  // namespace

TEST(WeightStore, OpensASingleFileFolder) {
  TempDir dir;
  write_file(dir.file("model.safetensors"), f32_file({{"a", {1, 2, 3}}, {"b", {4}}}));
  WeightStore store = WeightStore::open(dir.path());
  EXPECT_TRUE(store.has("a"));
  EXPECT_FALSE(store.has("c"));
  EXPECT_EQ(store.get("a", {3}).ptr<float>()[2], 3.0f);
  EXPECT_EQ(store.parameter_count(), 4);
}

TEST(WeightStore, OpensShardedFolders) {
  TempDir dir;
  write_sharded(dir, kIndex);
  WeightStore store = WeightStore::open(dir.path());
  EXPECT_EQ(store.size(), 4u);
  EXPECT_EQ(store.shards().size(), 2u);
  EXPECT_EQ(store.get("model.embed_tokens.weight", {4}).ptr<float>()[3], 4.0f);
  EXPECT_EQ(store.get("model.layers.1.w").ptr<float>()[0], 7.0f);
  EXPECT_EQ(store.get("lm_head.weight").ptr<float>()[3], 12.0f);
  EXPECT_EQ(store.parameter_count(), 4 + 2 + 2 + 4);
  EXPECT_EQ(store.total_bytes(), 12 * 4);
}

TEST(WeightStore, ErrorsNameTheTensorTheShapeAndTheFolder) {
  TempDir dir;
  write_file(dir.file("model.safetensors"), f32_file({{"a", {1, 2, 3, 4, 5, 6}}}));
  WeightStore store = WeightStore::open(dir.path());
  expect_error([&] { store.get("model.layers.3.mlp.up_proj.weight"); }, ErrorCode::invalid_file,
               {"model.layers.3.mlp.up_proj.weight", dir.path()});
  expect_error(
      [&] {
        store.get("a", {3, 2});
      },
      ErrorCode::invalid_file, {"'a'", "shape [6], expected [3, 2]"});
}

TEST(WeightStore, RejectsAFolderWithoutWeights) {
  TempDir dir;
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {dir.path(), "model.safetensors"});
  expect_error([&] { WeightStore::open(dir.file("absent")); }, ErrorCode::invalid_file,
               {"absent", "not a folder"});
}

TEST(WeightStore, RejectsAMissingShard) {
  TempDir dir;
  write_sharded(dir, kIndex);
  std::filesystem::remove(dir.file("model-00002-of-00002.safetensors"));
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"model-00002-of-00002.safetensors", "missing"});
}

TEST(WeightStore, RejectsATensorInTwoShards) {
  TempDir dir;
  write_sharded(dir, kIndex);
  write_file(dir.file("model-00002-of-00002.safetensors"), f32_file({{"model.layers.1.w", {7, 8}},
                                                                     {"lm_head.weight", {9, 10, 11, 12}},
                                                                     {"model.layers.0.w", {0, 0}}}));
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"'model.layers.0.w'", "two shards", "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"});
}

TEST(WeightStore, RejectsIndexesThatDisagreeWithTheShards) {
  TempDir dir;
  // The index lists a tensor no shard holds.
  write_sharded(dir, R"({"weight_map": {"model.layers.0.w": "model-00001-of-00002.safetensors",
                                        "model.layers.1.w": "model-00002-of-00002.safetensors",
                                        "model.layers.2.w": "model-00002-of-00002.safetensors"}})");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"'model.layers.2.w'", "no shard"});
  // The index names the wrong shard.
  write_file(dir.file("model.safetensors.index.json"),
             R"({"weight_map": {"model.layers.0.w": "model-00002-of-00002.safetensors",
                                "model.layers.1.w": "model-00001-of-00002.safetensors"}})");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"'model.layers.0.w'", "found in"});
  // A shard name that leaves the folder.
  write_file(dir.file("model.safetensors.index.json"), R"({"weight_map": {"x": "../model.safetensors"}})");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"'x'", "not a file in the folder"});
  write_file(dir.file("model.safetensors.index.json"), R"({"metadata": {}})");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file, {"weight_map"});
  write_file(dir.file("model.safetensors.index.json"), R"({"weight_map": {"x": 3}})");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file, {"'x'"});
  write_file(dir.file("model.safetensors.index.json"), R"({"weight_map": )");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"model.safetensors.index.json", "invalid JSON"});
}

TEST(WeightStore, CorruptShardIsNamed) {
  TempDir dir;
  write_sharded(dir, kIndex);
  write_file(dir.file("model-00002-of-00002.safetensors"), le64(1000) + "{}");
  expect_error([&] { WeightStore::open(dir.path()); }, ErrorCode::invalid_file,
               {"model-00002-of-00002.safetensors"});
}

TEST(WeightStore, RenamesAPrefixForMultimodalFolders) {
  TempDir dir;
  write_file(dir.file("model.safetensors"), f32_file({{"model.language_model.embed_tokens.weight", {1, 2}},
                                                      {"model.language_model.layers.0.w", {3}},
                                                      {"model.visual.patch_embed.weight", {4}},
                                                      {"lm_head.weight", {5, 6}}}));
  WeightStore store = WeightStore::open(dir.path());
  EXPECT_EQ(store.rename_prefix("model.language_model.", "model."), 2);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight",
                                                     "model.layers.0.w", "model.visual.patch_embed.weight"}));
  EXPECT_EQ(store.get("model.layers.0.w").ptr<float>()[0], 3.0f);
  EXPECT_FALSE(store.has("model.language_model.layers.0.w"));
  // A rename onto an existing name is refused.
  expect_error([&] { store.rename_prefix("model.visual.patch_embed.weight", "model.layers.0.w"); },
               ErrorCode::invalid_file, {"collides"});
  TempDir dir2;
  write_file(dir2.file("model.safetensors"), f32_file({{"a.x", {1}}, {"b.x", {2}}}));
  WeightStore two = WeightStore::open(dir2.path());
  expect_error([&] { two.rename_prefix("a.", "b."); }, ErrorCode::invalid_file, {"'a.x'", "'b.x'"});
}
