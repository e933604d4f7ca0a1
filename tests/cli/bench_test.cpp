// `keel bench --depth` and `--parallel` driven in-process on the bundled model: the rows count what the
// arguments ask for (steps from the chunk arithmetic, every sequence's tokens decoded, the state of P
// sequences P times one's), and arguments that cannot be timed as asked are refused with their reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace keel::cli {
namespace {

const std::string kDir = std::string(KEEL_SOURCE_DIR) + "/models/keel-brown-nemotron-h-8m";

// Runs `keel bench <args> --json FILE` in-process; returns the JSON.
nlohmann::json bench(std::vector<std::string> args) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("keel_bench_test_" + std::to_string(::getpid()) + ".json"))
          .string();
  CLI::App app;
  add_bench_command(app);
  args.insert(args.begin(), {"keel", "bench", "-m", kDir, "-t", "2"});
  args.insert(args.end(), {"--json", path});
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  ::testing::internal::CaptureStdout();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  ::testing::internal::GetCapturedStdout();
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return j;
}

TEST(Bench, DepthTimesTheNewTokensAfterTheContext) {
  const nlohmann::json j =
      bench({"--prompt-lengths", "32,40", "--gen", "4", "--prefill-chunk-size", "32", "--depth", "96"});
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["settings"]["depth"], 96);
  EXPECT_NE(j["command"].get<std::string>().find("--depth 96"), std::string::npos);
  for (const auto& r : j["rows"]) {
    EXPECT_FALSE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["depth"], 96);
    // 96 context tokens in 3 chunks of 32, then the new ones: 1 chunk for 32, 2 for 40
    const int64_t L = r["prompt_tokens"];
    EXPECT_EQ(r["prefill_steps"], 3 + (L + 31) / 32) << "L=" << L;
    EXPECT_GT(r["prefill_tok_s"].get<double>(), 0);
    EXPECT_GT(r["decode_tok_s"].get<double>(), 0);
  }
}

TEST(Bench, ParallelDecodesEverySequence) {
  const nlohmann::json j =
      bench({"--prompt-lengths", "48", "--gen", "6", "--prefill-chunk-size", "64", "--parallel", "1,4"});
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto &one = j["rows"][0], &four = j["rows"][1];
  EXPECT_EQ(one["parallel"], 1);
  EXPECT_EQ(four["parallel"], 4);
  EXPECT_EQ(j["settings"]["parallel"], std::vector<int>({1, 4}));
  EXPECT_NE(j["command"].get<std::string>().find("--parallel 1,4"), std::string::npos);
  for (const auto& r : j["rows"]) {
    EXPECT_FALSE(r.contains("error")) << r.dump();
    EXPECT_GT(r["decode_tok_s"].get<double>(), 0);
    EXPECT_GT(r["prefill_tok_s"].get<double>(), 0);
  }
  // four sequences' state, each the one-sequence row's
  EXPECT_EQ(four["state_bytes"].get<int64_t>(), 4 * one["state_bytes"].get<int64_t>());
}

TEST(Bench, RefusesWhatCannotBeTimedAsAsked) {
  try {
    bench({"--prompt-lengths", "32", "--gen", "2", "--prefill-chunk-size", "32", "--depth", "40"});
    ADD_FAILURE() << "a depth off the step boundary was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("multiple of --prefill-chunk-size"), std::string::npos) << e.what();
  }
  try {
    bench({"--prompt-lengths", "32", "--gen", "2", "--prefill-chunk-size", "32", "--depth", "64",
           "--parallel", "2"});
    ADD_FAILURE() << "--depth with --parallel was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

}  // namespace
}  // namespace keel::cli
