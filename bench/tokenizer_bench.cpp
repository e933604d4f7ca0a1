// Tokenizer throughput: the Qwen3 tokenizer (../shared/fixtures/tokenizers/qwen3, or $KEEL_QWEN3_DIR) on ~400
// KB of generated English prose, one thread. Reports bytes/s; "cold" clears the BPE word cache before each
// pass.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace {

using keel::tokenizer::TokenId;
using keel::tokenizer::Tokenizer;

const Tokenizer& qwen3() {
  static const Tokenizer tok = [] {
    const char* env = std::getenv("KEEL_QWEN3_DIR");
    const std::filesystem::path repo = std::filesystem::path(__FILE__).parent_path().parent_path();
    return Tokenizer::load(env ? env : (repo.parent_path() / "shared/fixtures/tokenizers/qwen3").string());
  }();
  return tok;
}

// Sentences assembled from varied parts with a fixed seed: ordinary English with punctuation, numbers,
// contractions, quotes and paragraph breaks.
const std::string& english_text() {
  static const std::string text = [] {
    const std::vector<std::string> subjects = {
        "The old miller", "A young teacher",       "Our neighbours",
        "The committee",  "Every traveller",       "She",
        "The engineers",  "My grandmother",        "A quiet stranger",
        "The children",   "Nobody in the village", "The ship's captain",
        "Two scientists", "The mayor of the town", "His younger brother"};
    const std::vector<std::string> verbs = {"walked slowly toward",
                                            "wrote a long letter about",
                                            "could not stop thinking about",
                                            "argued for hours over",
                                            "had never seen",
                                            "carefully repaired",
                                            "was surprised by",
                                            "quietly remembered",
                                            "painted a picture of",
                                            "didn't understand",
                                            "returned in 1887 to",
                                            "paid 42 dollars for",
                                            "explained the history of",
                                            "they'd been searching for",
                                            "counted 3,500 stones along"};
    const std::vector<std::string> objects = {"the river behind the church",
                                              "an unusual machine",
                                              "the northern mountains",
                                              "the harbour at dawn",
                                              "a forgotten library",
                                              "the price of bread",
                                              "the railway station",
                                              "a letter from London",
                                              "the garden wall",
                                              "the winter storms",
                                              "an old photograph",
                                              "the market square",
                                              "the lighthouse",
                                              "a broken violin",
                                              "the evening newspaper"};
    const std::vector<std::string> tails = {".",
                                            ", and then it began to rain.",
                                            "; nobody knew why.",
                                            " before the sun went down.",
                                            ", although it was already late.",
                                            "! \"Remarkable,\" she said.",
                                            "? Perhaps.",
                                            " (or so they claimed).",
                                            ", which surprised everyone.",
                                            " on Tuesday, 14 March."};
    std::mt19937 rng(12345);
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    std::string out;
    while (out.size() < 400 * 1024) {
      out += pick(subjects) + " " + pick(verbs) + " " + pick(objects) + pick(tails);
      out += (rng() % 7 == 0) ? "\n\n" : " ";
    }
    return out;
  }();
  return text;
}

void BM_Qwen3EncodeEnglish(benchmark::State& state) {
  const std::string& text = english_text();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = qwen3().encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_Qwen3EncodeEnglish)->Unit(benchmark::kMillisecond);

void BM_Qwen3EncodeEnglishCold(benchmark::State& state) {
  const std::string& text = english_text();
  for (auto _ : state) {
    qwen3().clear_cache();
    auto ids = qwen3().encode(text);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Qwen3EncodeEnglishCold)->Unit(benchmark::kMillisecond);

void BM_Qwen3Decode(benchmark::State& state) {
  const auto ids = qwen3().encode(english_text());
  for (auto _ : state) {
    auto text = qwen3().decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_text().size()));
}
BENCHMARK(BM_Qwen3Decode)->Unit(benchmark::kMillisecond);

void BM_Qwen3StreamDecode(benchmark::State& state) {
  const auto ids = qwen3().encode(english_text());
  for (auto _ : state) {
    keel::tokenizer::StreamDecoder s(qwen3(), true);
    size_t n = 0;
    for (TokenId id : ids) n += s.step(id).size();
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_Qwen3StreamDecode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
