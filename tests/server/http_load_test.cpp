// A bounded load run on loopback: N mixed requests (chat streamed and not, text completions, short and
// ~1500-token prompts, every tenth client hanging up mid-stream), C at a time, against the bundled hybrid
// model under
// --parallel 4. Every request must succeed (or be the deliberate hang-up), the server must stay up, and the
// pool must be back at its idle level at the end. Small in ctest; KEEL_LOAD_REQUESTS / KEEL_LOAD_CONCURRENCY
// make it bigger, and it prints the figures (requests/s, latency percentiles, tokens/s, pool peak).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "server_harness.h"

using namespace keel;
using namespace keel::testing;
using server::Json;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "the jury said " + std::to_string(i) + ", ";
  return s;
}

struct Outcome {
  bool ok = false;
  bool hung_up = false;
  double seconds = 0;
  int64_t completion_tokens = 0;
  std::string error;
};

Outcome run_one(int port, int i, const std::string& long_text) {
  Outcome o;
  auto t0 = std::chrono::steady_clock::now();
  const int kind = i % 4;
  const bool hang_up = i % 10 == 9;
  const bool stream = kind == 0 || kind == 2 || hang_up;
  Json body;
  std::string path = "/v1/chat/completions";
  std::string user = kind == 2 ? long_text : "Tell me about the election, number " + std::to_string(i) + ".";
  if (kind == 3) {
    path = "/v1/completions";
    body = {{"prompt", "She looked at him and " + words(i % 7)}};
  } else {
    body = {{"messages", Json::array({Json{{"role", "user"}, {"content", user}}})}};
  }
  body["max_tokens"] = 8 + (i * 7) % 25;
  body["temperature"] = (i % 3) * 0.5;
  body["seed"] = i;
  body["stream"] = stream;
  if (stream) body["stream_options"] = {{"include_usage", true}};
  RawHttp c(port);
  c.send("POST", path, body.dump());
  if (!c.read_headers(120000)) {
    o.error = "no response headers";
    return o;
  }
  if (c.status != 200) {
    o.error = "status " + std::to_string(c.status) + ": " + c.read_body();
    return o;
  }
  if (hang_up) {
    c.read_body_some(50);
    c.close();
    o.ok = o.hung_up = true;
    return o;
  }
  std::string text = c.read_body(120000);
  if (!c.body_done()) {
    o.error = "body did not end";
    return o;
  }
  try {
    if (stream) {
      std::vector<std::string> events = sse_data(text);
      if (events.empty() || events.back() != "[DONE]") throw std::runtime_error("no [DONE]: " + text);
      Json usage = Json::parse(events[events.size() - 2])["usage"];
      o.completion_tokens = usage["completion_tokens"];
    } else {
      Json j = Json::parse(text);
      if (j.contains("error")) throw std::runtime_error(text);
      std::string reason = j["choices"][0]["finish_reason"];
      if (reason != "stop" && reason != "length") throw std::runtime_error("finish_reason " + reason);
      o.completion_tokens = j["usage"]["completion_tokens"];
    }
    o.ok = true;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace

TEST(HttpLoad, MixedRequestsAllSucceedAndMemoryReturns) {
  const int n_requests = env_int("KEEL_LOAD_REQUESTS", 48);
  const int concurrency = env_int("KEEL_LOAD_CONCURRENCY", 16);
  HarnessOptions o;
  o.model_dir = default_model_dir();
  o.scheduler = {.n_slots = 4, .ctx_size = 4096, .prefill_chunk_size = 256};
  o.server.parallel = 4;
  o.server.metrics = true;
  o.threads = env_int("KEEL_LOAD_THREADS", 2);
  InProcessServer srv(o);
  srv.pool().mark_peak();
  const int64_t idle_before = srv.pool().in_use();
  std::string long_text;
  while (srv.tokenizer().encode(long_text).size() < 1500) long_text += words(20);

  std::atomic<int> next{0};
  std::mutex mutex;
  std::vector<Outcome> outcomes;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&] {
      for (int i = next++; i < n_requests; i = next++) {
        Outcome r = run_one(srv.port(), i, long_text);
        std::lock_guard lock(mutex);
        outcomes.push_back(r);
      }
    });
  }
  for (auto& t : clients) t.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int failures = 0, hung_up = 0;
  int64_t tokens = 0;
  std::vector<double> latencies;
  for (const Outcome& r : outcomes) {
    if (!r.ok) {
      ++failures;
      ADD_FAILURE() << r.error;
    }
    if (r.hung_up) ++hung_up;
    if (r.ok && !r.hung_up) {
      latencies.push_back(r.seconds);
      tokens += r.completion_tokens;
    }
  }
  EXPECT_EQ(static_cast<int>(outcomes.size()), n_requests);
  EXPECT_EQ(failures, 0);
  auto health = srv.client().Get("/health");
  EXPECT_TRUE(health && health->status == 200) << "the server still answers";
  EXPECT_TRUE(srv.wait_idle()) << "pool " << srv.pool().in_use() << " idle "
                               << InProcessServer::idle_bytes(srv.stats());
  EngineStats s = srv.stats();
  // Idle again: what the model holds, plus what the prompt cache keeps (bounded by its entry count).
  EXPECT_EQ(srv.pool().in_use() - s.scheduler.prompt_cache_bytes, idle_before);
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[static_cast<size_t>(p * (latencies.size() - 1))];
  };
  std::printf(
      "load: %d requests (%d hung up on purpose), %d at a time, %.1f s: %.2f req/s, %.1f generated tok/s; "
      "latency p50 %.3f s, p95 %.3f s, max %.3f s; pool peak %.2f MiB over an idle %.2f MiB (limit %.0f "
      "MiB); "
      "steps %lld, deferred %lld, preemptions %lld, cache hits %lld\n",
      n_requests, hung_up, concurrency, wall, n_requests / wall, tokens / wall, pct(0.5), pct(0.95), pct(1.0),
      srv.pool().peak() / 1048576.0, InProcessServer::idle_bytes(s) / 1048576.0,
      srv.pool().limit() / 1048576.0, static_cast<long long>(s.scheduler.steps),
      static_cast<long long>(s.scheduler.deferred), static_cast<long long>(s.scheduler.preemptions),
      static_cast<long long>(s.scheduler.prompt_cache_hits));
}
