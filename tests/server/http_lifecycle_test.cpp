// A request's life around the engine: twelve open streams (ten waiting for a slot, each holding a request
// worker) do not starve a new connection; a long prefill keeps the client's connection alive (SSE comments,
// or whitespace before a JSON body); a client that hangs up mid-prefill cancels its request at once and its
// memory returns (as /metrics shows).
#include <gtest/gtest.h>

#include <regex>

#include "curl.h"
#include "server_harness.h"

using namespace keel;
using namespace keel::testing;
using server::Json;

namespace {

std::string long_prompt_body(const tokenizer::Tokenizer& tok, int64_t tokens, bool stream) {
  std::string text;
  int i = 0;
  while (static_cast<int64_t>(tok.encode(text).size()) < tokens)
    text += "the quiet river " + std::to_string(i++) + " ";
  Json body = {{"messages", Json::array({Json{{"role", "user"}, {"content", text}}})},
               {"max_tokens", 4},
               {"temperature", 0},
               {"stream", stream}};
  return body.dump();
}

// One gauge or counter from /metrics (its first sample line with exactly this name and labels).
double metric(int port, const std::string& name) {
  CurlReply r = curl(port, "GET", "/metrics");
  std::smatch m;
  std::regex re("(^|\n)" + std::regex_replace(name, std::regex(R"([{}"=])"), R"(\$&)") + " ([-0-9.e+]+)");
  if (!std::regex_search(r.body, m, re)) {
    ADD_FAILURE() << "no metric " << name << " in\n" << r.body;
    return -1;
  }
  return std::stod(m[2]);
}

}  // namespace

TEST(HttpLifecycle, ManyOpenStreamsDoNotStarveNewConnections) {
  HarnessOptions o;
  o.scheduler.n_slots = 2;
  o.scheduler.ctx_size = 4096;
  o.server.parallel = 2;
  InProcessServer srv(o);
  // 12 streams: 2 generate, 10 wait for a slot (each holds an HTTP worker while it waits, before any header).
  std::vector<std::unique_ptr<RawHttp>> streams;
  Json body = {{"messages", Json::array({Json{{"role", "user"}, {"content", "Go on and on."}}})},
               {"max_tokens", 4000},
               {"stream", true}};
  for (int i = 0; i < 12; ++i) {
    streams.push_back(std::make_unique<RawHttp>(srv.port()));
    streams.back()->send("POST", "/v1/chat/completions", body.dump());
  }
  // Give the server time to take all twelve.
  for (int i = 0; i < 200 && srv.stats().waiting + srv.stats().running < 12; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EngineStats s = srv.stats();
  EXPECT_EQ(s.running + s.waiting, 12u) << "every stream reached the engine";
  auto t0 = std::chrono::steady_clock::now();
  CurlReply h = curl(srv.port(), "GET", "/health");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(h.status, 200);
  EXPECT_LT(seconds, 2.0) << "a new connection was answered while 12 streams were open";
  CurlReply m = curl(srv.port(), "GET", "/v1/models");
  EXPECT_EQ(m.status, 200);
  streams.clear();  // every client hangs up: all twelve are cancelled
  EXPECT_TRUE(srv.wait_idle()) << "in use " << srv.pool().in_use();
}

TEST(HttpLifecycle, DisconnectMidPrefillCancelsAndFreesMemory) {
  HarnessOptions o;
  o.model_dir = default_model_dir();  // nemotron_h: a hybrid with real prefill work
  o.scheduler = {.n_slots = 1, .ctx_size = 4096, .prefill_chunk_size = 16, .prompt_cache_entries = 0};
  o.server.metrics = true;
  o.server.keepalive_interval = std::chrono::milliseconds(30);
  InProcessServer srv(o);
  const int64_t prompt_tokens = 3000;
  std::string body = long_prompt_body(srv.tokenizer(), prompt_tokens, true);
  double idle = metric(srv.port(), "keel_pool_bytes_in_use");
  int64_t steps_before = srv.stats().scheduler.steps;

  RawHttp c(srv.port());
  c.send("POST", "/v1/chat/completions", body);
  ASSERT_TRUE(c.read_headers());
  ASSERT_EQ(c.status, 200);
  // Read until a keep-alive comment says the prefill is under way, then hang up.
  std::smatch m;
  std::regex progress(R"(: prefill (\d+)/(\d+))");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::regex_search(c.body, m, progress) && std::chrono::steady_clock::now() < deadline)
    ASSERT_TRUE(c.read_body_some(100)) << "the stream ended before a prefill keep-alive: " << c.body;
  ASSERT_TRUE(std::regex_search(c.body, m, progress)) << c.body;
  EXPECT_LT(std::stoll(m[1]), std::stoll(m[2]));
  EXPECT_GT(metric(srv.port(), "keel_pool_bytes_in_use"), idle) << "the request holds state while it runs";
  auto hung_up = std::chrono::steady_clock::now();
  c.close();

  // Memory is back at its idle level soon after, as /metrics shows, and the prefill stopped early.
  double in_use = -1;
  while (std::chrono::steady_clock::now() - hung_up < std::chrono::seconds(5)) {
    in_use = metric(srv.port(), "keel_pool_bytes_in_use");
    if (in_use == idle && metric(srv.port(), "keel_requests_running") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  double freed_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - hung_up).count();
  EXPECT_EQ(in_use, idle);
  EXPECT_LT(freed_after, 1.0) << "cancellation should be prompt";
  int64_t steps = srv.stats().scheduler.steps - steps_before;
  EXPECT_LT(steps, prompt_tokens / 16) << "the prefill did not run to its end";
  EXPECT_GE(metric(srv.port(), R"(keel_requests_total{endpoint="chat",outcome="cancelled"})"), 1);
}

TEST(HttpLifecycle, NonStreamingKeepAliveIsLeadingWhitespace) {
  HarnessOptions o;
  o.model_dir = default_model_dir();
  o.scheduler = {.n_slots = 1, .ctx_size = 4096, .prefill_chunk_size = 16, .prompt_cache_entries = 0};
  o.server.keepalive_interval = std::chrono::milliseconds(20);
  InProcessServer srv(o);
  RawHttp c(srv.port());
  c.send("POST", "/v1/chat/completions", long_prompt_body(srv.tokenizer(), 1500, false));
  ASSERT_TRUE(c.read_headers());
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(c.headers["content-type"].rfind("application/json", 0), 0u);
  std::string body = c.read_body(120000);
  ASSERT_TRUE(c.body_done());
  size_t first = body.find_first_not_of(' ');
  ASSERT_NE(first, std::string::npos);
  EXPECT_GT(first, 0u) << "keep-alive spaces came before the JSON";
  Json j = Json::parse(body);  // leading whitespace is valid JSON
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int64_t>(), 1500);
}
