// Concurrency and reuse through the HTTP API on hybrid models: four streams at once under --parallel 4 each
// give what the same request gives alone, and a conversation's second turn reuses the first turn's prompt
// state (cached_tokens > 0) with log-probabilities within 1e-4 of a server that has no prompt cache.
#include <gtest/gtest.h>

#include "server_harness.h"

using namespace keel;
using namespace keel::testing;
using server::Json;

namespace {

Json chat_once(int port, const Json& body) {
  HttpClient c("127.0.0.1", port);
  c.set_read_timeout(120);
  auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return Json();
  EXPECT_EQ(res->status, 200) << res->body;
  return Json::parse(res->body);
}

// Content and per-token logprob entries of a streamed chat completion.
std::pair<std::string, Json> chat_stream(int port, const Json& body) {
  RawHttp c(port);
  Json b = body;
  b["stream"] = true;
  c.send("POST", "/v1/chat/completions", b.dump());
  EXPECT_TRUE(c.read_headers());
  std::string text;
  Json logprobs = Json::array();
  for (const std::string& d : sse_data(c.read_body())) {
    if (d == "[DONE]") continue;
    Json e = Json::parse(d);
    if (e["choices"].empty()) continue;
    const Json& ch = e["choices"][0];
    if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (ch["logprobs"].is_object())
      for (const Json& x : ch["logprobs"]["content"]) logprobs.push_back(x);
  }
  return {text, logprobs};
}

Json request(const std::string& user, int max_tokens) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", user}}})},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"logprobs", true},
              {"top_logprobs", 2}};
}

}  // namespace

TEST(HttpParallel, FourConcurrentStreamsEqualTheirSingleRuns) {
  HarnessOptions o;
  o.model_dir = default_model_dir();  // nemotron_h: Mamba2 + attention + MoE
  o.scheduler = {.n_slots = 4, .ctx_size = 1024, .prefill_chunk_size = 32, .prompt_cache_entries = 0};
  o.server.parallel = 4;
  o.threads = 2;
  InProcessServer srv(o);
  const std::vector<std::string> prompts = {"Tell me about the election.", "What did the jury say?",
                                            "Describe your home town in a few words, please.", "Hello"};
  std::vector<std::pair<std::string, Json>> alone;
  for (const auto& p : prompts) alone.push_back(chat_stream(srv.port(), request(p, 24)));
  std::vector<std::pair<std::string, Json>> together(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] { together[i] = chat_stream(srv.port(), request(prompts[i], 24)); });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_FALSE(alone[i].first.empty()) << i;
    EXPECT_EQ(together[i].first, alone[i].first) << "prompt " << i;
    ASSERT_EQ(together[i].second.size(), alone[i].second.size()) << i;
    for (size_t k = 0; k < alone[i].second.size(); ++k)
      EXPECT_NEAR(together[i].second[k]["logprob"].get<double>(), alone[i].second[k]["logprob"].get<double>(),
                  1e-4)
          << "prompt " << i << " token " << k;
  }
  EXPECT_TRUE(srv.wait_idle());
}

// On the bundled model (a hybrid: its Mamba2 states cannot be cut back, so reuse needs the scheduler's state
// checkpoints), whose replies are short enough to end a first turn early; the random fixtures' are not.
TEST(PromptCache, SecondTurnReusesTheFirstAndMatchesAnUncachedRun) {
  HarnessOptions cached, uncached;
  cached.model_dir = uncached.model_dir = default_model_dir();
  cached.scheduler = {.n_slots = 1, .ctx_size = 256, .prefill_chunk_size = 32, .prompt_cache_entries = 4};
  uncached.scheduler = cached.scheduler;
  uncached.scheduler.prompt_cache_entries = 0;
  InProcessServer with_cache(cached), without_cache(uncached);

  // The first turn asks for a short reply (its state's capacity is prompt + 12 tokens); the second asks for
  // the context's end, so its reuse goes through a copy of the cached state with room for it. A stop string
  // keeps the first reply short.
  Json turn1 = request("Tell me about your home town.", 12);
  turn1["stop"] = Json::array({" ", "\n"});
  Json first = chat_once(with_cache.port(), turn1);
  std::string reply = first["choices"][0]["message"]["content"].is_string()
                          ? first["choices"][0]["message"]["content"].get<std::string>()
                          : "";
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  Json turn2 = turn1;
  turn2["messages"].push_back(Json{{"role", "assistant"}, {"content", reply}});
  turn2["messages"].push_back(Json{{"role", "user"}, {"content", "And what did the people there do?"}});
  turn2["top_logprobs"] = 5;
  turn2["max_tokens"] = 256;
  turn2.erase("stop");
  Json a = chat_once(with_cache.port(), turn2);
  Json b = chat_once(without_cache.port(), turn2);
  int64_t cached_tokens = a["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached_tokens, 0) << "the second turn reused the first turn's prompt";
  EXPECT_LT(cached_tokens, a["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(a["usage"]["prompt_tokens"], b["usage"]["prompt_tokens"]);
  EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]);
  const Json& la = a["choices"][0]["logprobs"]["content"];
  const Json& lb = b["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(la.size(), lb.size());
  ASSERT_GT(la.size(), 0u);
  for (size_t k = 0; k < la.size(); ++k) {
    ASSERT_EQ(la[k]["top_logprobs"].size(), lb[k]["top_logprobs"].size());
    for (size_t j = 0; j < la[k]["top_logprobs"].size(); ++j) {
      EXPECT_EQ(la[k]["top_logprobs"][j]["token"], lb[k]["top_logprobs"][j]["token"]) << k << "/" << j;
      EXPECT_NEAR(la[k]["top_logprobs"][j]["logprob"].get<double>(),
                  lb[k]["top_logprobs"][j]["logprob"].get<double>(), 1e-4)
          << "token " << k << " alternative " << j;
    }
  }
  EXPECT_TRUE(with_cache.wait_idle());
}
