// `keel run` and `keel perplexity` driven in-process on the default model, against what transformers recorded
// in models/keel-brown-nemotron-h-8m/results.json (model.generate greedy continuations and a chat reply) and
// eval/valid_nll.json (per-token NLL).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../load/test_files.h"
#include "cli/commands.h"

namespace keel::cli {
namespace {

const std::string kDir = std::string(KEEL_SOURCE_DIR) + "/models/keel-brown-nemotron-h-8m";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Runs `keel <args>` in-process; returns stdout.
std::string keel(std::vector<std::string> args) {
  CLI::App app;
  add_run_command(app);
  add_perplexity_command(app);
  args.insert(args.begin(), "keel");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  ::testing::internal::CaptureStdout();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  return ::testing::internal::GetCapturedStdout();
}

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(Run, GreedyMatchesTransformersGenerate) {
  const nlohmann::json results = read_json(kDir + "/results.json");
  int checked = 0;
  for (const auto& s : results["samples"]) {
    if (s["mode"] != "greedy") continue;
    const std::vector<int32_t> prompt = s["prompt_ids"], want = s["output_ids"];
    const nlohmann::json out =
        nlohmann::json::parse(keel({"run", "-m", kDir, "--prompt-ids", join(prompt), "-n",
                                    std::to_string(want.size()), "--json", "-t", "2"}));
    EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), want) << "prompt " << join(prompt);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

// The README says `keel run` (and perplexity, bench) use the bundled model when no --model is given, as
// `keel serve` does; it said "--model is required" (issue 15, item 12). Run from the repository's root, as
// `make run` does.
TEST(Run, WithoutModelUsesTheBundledModel) {
  const nlohmann::json s = read_json(kDir + "/results.json")["samples"][0];
  const std::vector<int32_t> prompt = s["prompt_ids"], want = s["output_ids"];
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(KEEL_SOURCE_DIR);
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(
        keel({"run", "--prompt-ids", join(prompt), "-n", std::to_string(want.size()), "--json", "-t", "2"}));
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  std::filesystem::current_path(cwd);
  EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), want);
}

TEST(Run, ChatWrapsThePromptInTheTemplate) {
  const nlohmann::json chat = read_json(kDir + "/results.json")["chat"][0];
  ASSERT_EQ(chat["messages"].size(), 1u);
  const std::vector<int32_t> want = chat["output_ids"];
  const nlohmann::json out = nlohmann::json::parse(
      keel({"run", "-m", kDir, "--chat", "-p", chat["messages"][0]["content"].get<std::string>(), "-n", "40",
            "--json", "-t", "2"}));
  EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), want);  // ends with the eos, which stops generation
  EXPECT_EQ(out["text"], chat["reply"]);
}

TEST(Perplexity, IdsFileMatchesTransformers) {
  const nlohmann::json doc = read_json(kDir + "/eval/valid_nll.json")["documents"][0];
  const std::vector<int32_t> ids = doc["token_ids"];
  const std::vector<double> want = doc["nll"];
  testing::TempDir dir;
  std::string text;
  for (int32_t id : ids) text += std::to_string(id) + " ";
  testing::write_file(dir.file("ids.txt"), text + "\n");
  const nlohmann::json out =
      nlohmann::json::parse(keel({"perplexity", "-m", kDir, "--ids-file", dir.file("ids.txt"), "--ctx", "512",
                                  "--prefill-chunk-size", "200", "--json", "-t", "2"}));
  const std::vector<double> nll = out["nll"];
  ASSERT_EQ(nll.size(), want.size());
  double sum = 0, ref = 0;
  for (size_t i = 0; i < nll.size(); ++i) {
    EXPECT_NEAR(nll[i], want[i], 1e-3) << "token " << i;
    sum += nll[i];
    ref += want[i];
  }
  EXPECT_EQ(out["argmax"].size(), nll.size());
  EXPECT_NEAR(out["ppl"].get<double>(), std::exp(sum / double(nll.size())), 1e-9);
  EXPECT_NEAR(std::exp(sum / double(nll.size())) / std::exp(ref / double(nll.size())), 1.0, 1e-3);
}

}  // namespace
}  // namespace keel::cli
