// The Messages API over HTTP against a real server in the test process: count_tokens is the prompt the
// messages call prefills, and the prompt the chat-completions endpoint builds for the same conversation (one
// path, two dialects); Claude Code's per-request billing-header block does not defeat the prompt cache; a
// stream sends message_start at once and pings while a long prompt prefills; stop reasons max_tokens and
// model_context_window_exceeded; Anthropic-shaped errors for the API key (x-api-key and Bearer), unknown
// paths and a prompt longer than the context, with the exact message Claude Code matches.
#include <gtest/gtest.h>

#include "server_harness.h"

using namespace keel;
using namespace keel::testing;
using server::Json;

namespace {

struct Reply {
  int status = 0;
  Json body;
};

Reply post(InProcessServer& srv, const std::string& path, const Json& body, const Headers& h = {}) {
  auto res = srv.client().Post(path.c_str(), h, body.dump(), "application/json");
  EXPECT_TRUE(res) << path;
  if (!res) return {};
  return {res->status, Json::parse(res->body, nullptr, false)};
}

// Anthropic SSE: "event: T\ndata: {...}\n\n" → the data objects; checks each event name matches its type.
std::vector<Json> events_of(const std::string& body) {
  std::vector<Json> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t e = body.find("\n\n", pos);
    if (e == std::string::npos) break;
    std::string ev = body.substr(pos, e - pos);
    pos = e + 2;
    size_t nl = ev.find('\n');
    EXPECT_EQ(ev.rfind("event: ", 0), 0u) << ev;
    EXPECT_NE(nl, std::string::npos) << ev;
    if (nl == std::string::npos) continue;
    std::string name = ev.substr(7, nl - 7);
    EXPECT_EQ(ev.compare(nl + 1, 6, "data: "), 0) << ev;
    Json data = Json::parse(ev.substr(nl + 7));
    EXPECT_EQ(data["type"], name);
    out.push_back(std::move(data));
  }
  return out;
}

Json user(const std::string& text) {
  return Json{{"role", "user"}, {"content", text}};
}

Json system_blocks(const std::string& billing) {
  return Json::array(
      {Json{{"type", "text"}, {"text", "x-anthropic-billing-header: cc_version=2.1.328; cch=" + billing}},
       Json{{"type", "text"},
            {"text", "You are a careful assistant."},
            {"cache_control", {{"type", "ephemeral"}}}}});
}

}  // namespace

TEST(HttpAnthropic, CountTokensIsThePromptTheMessagesCallPrefills) {
  InProcessServer srv;
  Json conv = {{"model", "claude-sonnet-4-5"},
               {"system", system_blocks("abc")},
               {"messages", Json::array({user("Tell me a story about a jury.")})}};
  Reply count = post(srv, "/v1/messages/count_tokens", conv);
  ASSERT_EQ(count.status, 200) << count.body;
  const int64_t n = count.body["input_tokens"];
  EXPECT_GT(n, 10);

  Json msg = conv;
  msg["max_tokens"] = 3;
  msg["temperature"] = 0;
  Reply r = post(srv, "/v1/messages?beta=true", msg);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["usage"]["input_tokens"].get<int64_t>() +
                r.body["usage"]["cache_read_input_tokens"].get<int64_t>(),
            n);
  EXPECT_EQ(r.body["usage"]["output_tokens"], 3);
  EXPECT_EQ(r.body["stop_reason"], "max_tokens");
  EXPECT_EQ(r.body["model"], "claude-sonnet-4-5");

  // The OpenAI dialect builds the same prompt for the same conversation (the billing block is not part of
  // it).
  Json chat = {
      {"messages", Json::array({Json{{"role", "system"}, {"content", "You are a careful assistant."}},
                                user("Tell me a story about a jury.")})},
      {"max_tokens", 3},
      {"temperature", 0}};
  Reply c = post(srv, "/v1/chat/completions", chat);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.body["usage"]["prompt_tokens"], n);
  EXPECT_EQ(c.body["choices"][0]["message"]["content"], r.body["content"][0]["text"]);
}

TEST(HttpAnthropic, BillingHeaderThatChangesEveryRequestStillHitsThePromptCache) {
  InProcessServer srv;
  Json first = {{"max_tokens", 6},
                {"temperature", 0},
                {"system", system_blocks("11111")},
                {"messages", Json::array({user("Tell me a story about a jury.")})}};
  Reply a = post(srv, "/v1/messages", first);
  ASSERT_EQ(a.status, 200) << a.body;
  const int64_t prompt1 = a.body["usage"]["input_tokens"];
  EXPECT_EQ(a.body["usage"]["cache_read_input_tokens"], 0);

  // Turn two: a new billing value, the first reply, a new question.
  Json second = first;
  second["system"] = system_blocks("22222");
  second["messages"].push_back(Json{{"role", "assistant"}, {"content", a.body["content"]}});
  second["messages"].push_back(user("And then?"));
  Reply b = post(srv, "/v1/messages", second);
  ASSERT_EQ(b.status, 200) << b.body;
  const int64_t cached = b.body["usage"]["cache_read_input_tokens"];
  const int64_t fresh = b.body["usage"]["input_tokens"];
  // All of turn one's prompt is reused (the engine recomputes at most its last token); only the new part
  // prefills.
  EXPECT_GE(cached, prompt1 - 1) << b.body["usage"];
  EXPECT_LT(fresh, 40) << b.body["usage"];
  // And the two billing values count the same.
  Json c1 = first, c2 = first;
  c1.erase("max_tokens");
  c2.erase("max_tokens");
  c2["system"] = system_blocks("99999");
  EXPECT_EQ(post(srv, "/v1/messages/count_tokens", c1).body, post(srv, "/v1/messages/count_tokens", c2).body);
}

TEST(HttpAnthropic, StreamStartsAtOnceAndPingsDuringALongPrefill) {
  HarnessOptions o;
  o.model_dir = default_model_dir();  // nemotron_h: real prefill work
  o.scheduler = {.n_slots = 1, .ctx_size = 4096, .prefill_chunk_size = 16, .prompt_cache_entries = 0};
  o.server.keepalive_interval = std::chrono::milliseconds(20);
  InProcessServer srv(o);
  std::string longtext;
  for (int i = 0; i < 80; ++i) longtext += "the jury said the election was fair and the city was quiet. ";
  Json body = {
      {"max_tokens", 4}, {"stream", true}, {"temperature", 0}, {"messages", Json::array({user(longtext)})}};
  RawHttp c(srv.port());
  c.send("POST", "/v1/messages?beta=true", body.dump());
  ASSERT_TRUE(c.read_headers());
  ASSERT_EQ(c.status, 200) << c.read_body();
  EXPECT_EQ(c.headers["content-type"].rfind("text/event-stream", 0), 0u);
  // The first bytes after the headers are message_start, before the prefill ends.
  while (c.body.find("\n\n") == std::string::npos) ASSERT_TRUE(c.read_body_some(5000));
  EXPECT_EQ(c.body.rfind("event: message_start\n", 0), 0u) << c.body.substr(0, 200);
  std::string all = c.read_body();
  std::vector<Json> ev = events_of(all);
  ASSERT_GE(ev.size(), 6u);
  EXPECT_EQ(ev[0]["type"], "message_start");
  EXPECT_GT(ev[0]["message"]["usage"]["input_tokens"].get<int64_t>(), 900);
  size_t pings = 0, first_block = ev.size();
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["type"] == "ping" && i < first_block) ++pings;
    if (ev[i]["type"] == "content_block_start" && first_block == ev.size()) first_block = i;
  }
  EXPECT_GE(pings, 3u) << "pings while about 1000 prompt tokens prefill 16 at a time";
  EXPECT_EQ(ev[ev.size() - 2]["type"], "message_delta");
  EXPECT_EQ(ev[ev.size() - 2]["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(ev[ev.size() - 2]["usage"]["output_tokens"], 4);
  EXPECT_EQ(ev.back()["type"], "message_stop");
}

TEST(HttpAnthropic, GenerationToTheContextsEndIsModelContextWindowExceeded) {
  HarnessOptions o;
  o.scheduler = {.n_slots = 1, .ctx_size = 48, .prefill_chunk_size = 64};
  InProcessServer srv(o);
  srv.context().eos_tokens.clear();  // nothing ends the turn but the context
  Json body = {
      {"max_tokens", 1000}, {"temperature", 0}, {"messages", Json::array({user("Tell me a story.")})}};
  Reply r = post(srv, "/v1/messages", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t prompt = r.body["usage"]["input_tokens"].get<int64_t>() +
                         r.body["usage"]["cache_read_input_tokens"].get<int64_t>();
  const int64_t out = r.body["usage"]["output_tokens"];
  EXPECT_EQ(r.body["stop_reason"], "model_context_window_exceeded") << r.body;
  EXPECT_EQ(prompt + out, 48);
}

TEST(HttpAnthropic, ErrorsInAnthropicsShape) {
  HarnessOptions o;
  o.server.api_key = "sekret";
  o.server.max_body_bytes = size_t{32} << 10;
  InProcessServer srv(o);
  Json body = {{"max_tokens", 2}, {"messages", Json::array({user("hi")})}};
  auto expect_error = [](const Reply& r, int status, const char* type, const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.body;
    EXPECT_EQ(r.body["type"], "error") << what << ": " << r.body;
    EXPECT_EQ(r.body["error"]["type"], type) << what << ": " << r.body;
    EXPECT_TRUE(r.body["error"]["message"].is_string()) << what;
  };
  expect_error(post(srv, "/v1/messages", body), 401, "authentication_error", "no key");
  expect_error(post(srv, "/v1/messages", body, {{"x-api-key", "wrong"}}), 401, "authentication_error",
               "wrong");
  EXPECT_EQ(post(srv, "/v1/messages", body, {{"x-api-key", "sekret"}}).status, 200);
  EXPECT_EQ(post(srv, "/v1/messages", body, {{"Authorization", "Bearer sekret"}}).status, 200);
  const Headers key = {{"x-api-key", "sekret"}};
  expect_error(post(srv, "/v1/messages/batches", body, key), 404, "not_found_error", "unknown path");
  expect_error(
      post(srv, "/v1/messages", Json{{"messages", Json::array({user(std::string(40000, 'x'))})}}, key), 413,
      "request_too_large", "body over the limit");
  // The OpenAI endpoints keep their own shape.
  Reply openai = post(srv, "/v1/chat/completions", Json{{"messages", 3}}, key);
  EXPECT_EQ(openai.status, 400);
  EXPECT_TRUE(openai.body["error"].contains("param")) << openai.body;

  std::string longtext;
  for (int i = 0; i < 400; ++i) longtext += "the jury said it was fair. ";
  Reply big =
      post(srv, "/v1/messages", Json{{"max_tokens", 2}, {"messages", Json::array({user(longtext)})}}, key);
  expect_error(big, 400, "invalid_request_error", "prompt too long");
  std::string m = big.body["error"]["message"];
  int64_t n = 0, max = 0;
  ASSERT_EQ(std::sscanf(m.c_str(), "prompt is too long: %ld tokens > %ld maximum", &n, &max), 2) << m;
  EXPECT_EQ(m, fmt::format("prompt is too long: {} tokens > {} maximum", n, max));
  EXPECT_EQ(max, 1023);  // the context (1024) less the one token generated
  Reply counted =
      post(srv, "/v1/messages/count_tokens", Json{{"messages", Json::array({user(longtext)})}}, key);
  EXPECT_EQ(counted.body["input_tokens"], n);
  expect_error(
      post(srv, "/v1/messages",
           Json{{"messages",
                 Json::array({Json{{"role", "user"}, {"content", Json::array({Json{{"type", "image"}}})}}})}},
           key),
      400, "invalid_request_error", "image");
}

TEST(HttpAnthropic, OutOfMemoryBefore503OverloadedAfterHeadersAnErrorEvent) {
  InProcessServer srv;
  srv.model().fail_from = 0;  // every step fails: bounded retries, then 503 before any header
  Json body = {{"max_tokens", 4}, {"messages", Json::array({user("hi")})}};
  auto r = srv.client().Post("/v1/messages", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(Json::parse(r->body)["error"]["type"], "overloaded_error") << r->body;
  EXPECT_TRUE(r->has_header("Retry-After"));

  // After the headers: one error event, then the stream ends (no message_delta, no message_stop).
  srv.model().fail_from = -1;
  body["max_tokens"] = 1000;
  body["stream"] = true;
  RawHttp c(srv.port());
  c.send("POST", "/v1/messages", body.dump());
  ASSERT_TRUE(c.read_headers());
  EXPECT_EQ(c.status, 200);
  srv.model().fail_from = srv.model().calls.load();
  std::string all = c.read_body();
  EXPECT_TRUE(c.body_done()) << "the stream ended properly, not a dropped connection";
  std::vector<Json> ev = events_of(all);
  ASSERT_GE(ev.size(), 2u) << all;
  EXPECT_EQ(ev.front()["type"], "message_start");
  EXPECT_EQ(ev.back()["type"], "error") << all;
  EXPECT_EQ(ev.back()["error"]["type"], "overloaded_error") << all;
  for (const Json& e : ev) EXPECT_NE(e["type"], "message_stop");
  srv.model().fail_from = -1;
  EXPECT_TRUE(srv.wait_idle());
}
